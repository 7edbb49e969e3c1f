"""Every provider LiteLLM routes, through the LiteLLM SDK: ``litellm:<model>`` and
``litellm:<model>@URL``.

``<model>`` is LiteLLM's own name, provider first when LiteLLM cannot guess it
(``litellm:anthropic/claude-sonnet-4-5``, ``litellm:gemini/gemini-2.5-flash``,
``litellm:bedrock/...``, ``litellm:hosted_vllm/...``); the ``@URL`` is LiteLLM's
``api_base``. Messages go in the OpenAI form (images as data URIs) and LiteLLM writes them
in each provider's own form; settings a provider does not take (a seed, for Claude) are
dropped by LiteLLM rather than refused. Credentials are the environment variables LiteLLM
reads for that provider; the missing ones are named before any sample.

LiteLLM is an optional extra (``pip install 'cigeval[litellm]'``), imported when a spec names
the provider. cigeval asks it to use the price map inside the installed package rather than
fetch one at import (``LITELLM_LOCAL_MODEL_COST_MAP``, when not set already).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import httpx
import openai

from cigeval._caller import in_callers_words
from cigeval.backends._retrying import (
    PREFLIGHT_TIMEOUT_S,
    CallFailure,
    RetryingBackend,
    Secret,
    UnreadableReply,
    error_message,
    preflight_within,
    sdk_failure,
)
from cigeval.backends._spec import model_and_urls, public_url, url_list
from cigeval.backends.openai_backend import PLACEHOLDER_KEY, to_openai_message
from cigeval.backends.policy import CallPolicy
from cigeval.backends.usage import checked_usage
from cigeval.config import RunConfig
from cigeval.errors import ConfigError, MissingDependency, PreflightError
from cigeval.messages import ModelRequest, ModelResponse, Usage, normalize_finish_reason

#: Environment variables whose values are kept out of every message (LiteLLM reads
#: credentials from variables of many names: any of these endings is treated as one).
_SECRET_ENDINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
#: The key variable LiteLLM reads for common providers, named when a key is refused.
_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "azure": "AZURE_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
}


def litellm_sdk() -> ModuleType:
    """The ``litellm`` package, or MissingDependency naming the extra to install."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise MissingDependency("litellm", "litellm", "The litellm: judge") from None
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMBackend(RetryingBackend):
    """A model LiteLLM routes (``model`` in LiteLLM's naming).

    ``base_urls``: LiteLLM's ``api_base`` (several: round robin); without one, LiteLLM's
    default endpoint of the provider. ``api_key``: given to LiteLLM; without one LiteLLM reads
    the provider's variables (``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``, ...), and a server
    given by URL gets a placeholder when they are unset. The other settings are those of
    :class:`RetryingBackend`.
    """

    provider = "litellm"
    key_variable = "the provider's key variable"

    def __init__(
        self,
        model: str,
        base_urls: Sequence[str] | str | None = None,
        *,
        api_key: str | None = None,
        policy: CallPolicy | None = None,
    ) -> None:
        self._sdk = litellm_sdk()
        try:
            _, routed_to, _, default_base = self._sdk.get_llm_provider(model)
        except Exception as exc:
            raise ConfigError(
                f"LiteLLM cannot tell which provider serves {model!r} ({str(exc)[:160]}): "
                "write the provider first, e.g. 'litellm:anthropic/<model>'"
            ) from None
        self.routed_to = str(routed_to)
        urls = url_list(base_urls) if base_urls else []
        self.key_variable = _KEY_VARIABLES.get(
            self.routed_to, f"the key variable LiteLLM reads for {self.routed_to}"
        )
        key = api_key
        if api_key is None:
            check = self._sdk.validate_environment(model=model)
            missing = [str(k) for k in check.get("missing_keys") or []]
            if missing and not urls:
                raise ConfigError(
                    f"no credentials for the LiteLLM model {model!r} (provider "
                    f"{self.routed_to}): LiteLLM reads them from {', '.join(missing)}, which "
                    "are not set"
                )
            if missing:
                key = PLACEHOLDER_KEY
        self._api_key = Secret(key) if key else None
        secrets = [v for k, v in os.environ.items() if k.upper().endswith(_SECRET_ENDINGS)]
        if api_key:
            secrets.append(api_key)
        super().__init__(model, urls, secrets=[s for s in secrets if len(s) >= 8], policy=policy)
        self.default_url = str(default_base or f"{self.routed_to} (LiteLLM's default endpoint)")

    def arguments(self, request: ModelRequest, url: str | None) -> dict[str, Any]:
        """The keyword arguments of ``litellm.acompletion`` for ``request`` sent to ``url``."""
        settings = request.settings
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m) for m in request.messages],
            "timeout": self.policy.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if settings.temperature is not None:
            arguments["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            arguments["max_tokens"] = settings.max_tokens
        if settings.seed is not None:
            arguments["seed"] = settings.seed
        if settings.top_p is not None:
            arguments["top_p"] = settings.top_p
        if url:
            arguments["api_base"] = url
        if self._api_key is not None:
            arguments["api_key"] = self._api_key.value
        return arguments

    async def _attempt(self, request: ModelRequest, index: int) -> ModelResponse:
        url = self.urls[index]
        reply = await self._sdk.acompletion(**self.arguments(request, url))
        return read_litellm_reply(reply, self.model, self.public_endpoint(url))

    def _classify(self, exc: BaseException) -> CallFailure | None:
        # LiteLLM's exceptions subclass the openai SDK's.
        return sdk_failure(exc, openai)

    async def preflight(self) -> None:
        """Check every server answers a one-token request through LiteLLM, within seconds.

        Raises :class:`PreflightError` naming the fix: the credentials refused, the model
        unknown to the provider, or the server unreachable.
        """
        timeout = min(self.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        for url in self.urls:
            where = public_url(url) if url else self.default_url
            await preflight_within(self._preflight_one(url), timeout, where)

    async def _preflight_one(self, url: str | None) -> None:
        where = public_url(url) if url else self.default_url
        timeout = min(self.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        arguments = {
            "model": self.model,
            "messages": [{"role": "user", "content": "Reply with OK."}],
            "max_tokens": 1,
            "timeout": timeout,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if url:
            arguments["api_base"] = url
        if self._api_key is not None:
            arguments["api_key"] = self._api_key.value
        problem: str | None = None
        try:
            await self._sdk.acompletion(**arguments)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            problem = (
                f"{where} refused the credentials of the LiteLLM model {self.model!r} "
                f"({self.redact(error_message(exc))}); set {self.key_variable} to a key it accepts"
            )
        except openai.NotFoundError as exc:
            problem = (
                f"{where} does not know the model {self.model!r} "
                f"({self.redact(error_message(exc))}): check the name after 'litellm:'"
            )
        except openai.APITimeoutError:
            problem = f"the judge server at {where} did not answer within {timeout:g} s"
        except openai.APIConnectionError as exc:
            problem = (
                f"the judge server at {where} cannot be reached "
                f"({self.redact(str(exc))[:200]}); {_skip_preflight()}"
            )
        except openai.APIStatusError as exc:
            if _connection_failed(exc):  # LiteLLM reports some refused connections as 500s
                problem = (
                    f"the judge server at {where} cannot be reached "
                    f"({self.redact(error_message(exc))[:200]}); {_skip_preflight()}"
                )
            elif exc.status_code >= 500:
                problem = (
                    f"the judge server at {where} answered HTTP {exc.status_code} "
                    f"({self.redact(error_message(exc))}); wait until it is ready, or pass "
                    f"{in_callers_words('--no-preflight', 'preflight=False')} to start anyway"
                )
            # any other 4xx (429, a refused one-token request) proves the server is there
        if problem is not None:
            raise PreflightError(problem)


def _connection_failed(exc: BaseException) -> bool:
    """True when a connection that could not be made is behind ``exc``."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionError | httpx.ConnectError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def read_litellm_reply(reply: Any, default_model: str, endpoint: str) -> ModelResponse:
    """The text, served model, usage and finish reason of a LiteLLM completion (OpenAI form).

    Raises UnreadableReply when it has no choice or no text (retried).
    """
    choices = getattr(reply, "choices", None) or []
    if not choices:
        raise UnreadableReply("the reply has no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    reason = normalize_finish_reason(getattr(choice, "finish_reason", None))
    if text is None:
        if reason != "content_filter":
            raise UnreadableReply("the reply has no content")
        text = ""
    counts = getattr(reply, "usage", None)
    usage = Usage()
    if counts is not None:
        usage = checked_usage(
            getattr(counts, "prompt_tokens", None), getattr(counts, "completion_tokens", None)
        )
    model = getattr(reply, "model", None) or default_model
    return ModelResponse(str(text), str(model), usage, finish_reason=reason, endpoint=endpoint)


def from_spec(
    rest: str, *, base_url: str | Sequence[str] | None = None, run_config: RunConfig | None = None
) -> LiteLLMBackend:
    """The backend of a ``litellm:<model>[@URL,URL...]`` spec (the part after the prefix)."""
    name, urls = model_and_urls("litellm", rest, base_url)
    return LiteLLMBackend(name, urls or None, policy=CallPolicy.from_run_config(run_config))


def _skip_preflight() -> str:
    """How the caller turns the preflight check off, in the caller's words."""
    return f"{in_callers_words('--no-preflight', 'preflight=False')} skips this check"
