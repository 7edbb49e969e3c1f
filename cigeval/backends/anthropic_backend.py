"""Claude through the Anthropic SDK: ``anthropic:<model>`` and ``anthropic:<model>@URL``.

The SDK is an optional extra (``pip install 'cigeval[anthropic]'``), imported when a spec
names the provider. The key comes from ``ANTHROPIC_API_KEY`` (needed for Anthropic's own
API; a server of your own given by URL gets a placeholder when it is unset), the URL from
the spec, ``base_url`` or ``ANTHROPIC_BASE_URL``. Retries, limits and errors follow
:mod:`cigeval.backends._retrying`; the stop reason is reported in cigeval's finish-reason
vocabulary (:func:`cigeval.messages.normalize_finish_reason`).
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from cigeval._caller import in_callers_words
from cigeval._warn_once import warn_once
from cigeval.backends._reply_cap import IDENTITY, reply_cap_hooks
from cigeval.backends._retrying import (
    PREFLIGHT_TIMEOUT_S,
    CallFailure,
    PerLoop,
    RetryingBackend,
    Secret,
    UnreadableReply,
    error_message,
    preflight_within,
    sdk_failure,
)
from cigeval.backends._spec import model_and_urls, public_url, url_list
from cigeval.backends.policy import CallPolicy
from cigeval.backends.usage import checked_usage, token_count
from cigeval.config import RunConfig
from cigeval.errors import BackendError, ConfigError, MissingDependency, PreflightError
from cigeval.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ModelResponse,
    Usage,
    normalize_finish_reason,
)

logger = logging.getLogger("cigeval.backends.anthropic")

#: Anthropic's API (the SDK adds ``/v1/messages``).
ANTHROPIC_URL = "https://api.anthropic.com"
#: Key sent to servers of your own that need none; the SDK insists on some key.
PLACEHOLDER_KEY = "EMPTY"
#: The reply length sent when a request sets none (the messages API requires one).
DEFAULT_MAX_TOKENS = 4096
#: Stop reasons the shared vocabulary does not spell the Anthropic way.
_STOP_REASONS = {"model_context_window_exceeded": "length", "pause_turn": "unknown"}


def anthropic_sdk() -> ModuleType:
    """The ``anthropic`` package, or MissingDependency naming the extra to install."""
    try:
        import anthropic
    except ImportError:
        raise MissingDependency("anthropic", "anthropic", "The anthropic: judge") from None
    return anthropic


def sdk_base_url(url: str) -> str:
    """A server URL as the SDK takes it: without the ``/v1`` it adds itself."""
    stripped = url.rstrip("/")
    return stripped[: -len("/v1")] if stripped.endswith("/v1") else stripped


class AnthropicBackend(RetryingBackend):
    """A Claude model behind the Anthropic messages API (or a server speaking it).

    ``base_urls``: one URL or several replicas served round robin (default
    ``$ANTHROPIC_BASE_URL`` or Anthropic itself). ``api_key``: default
    ``$ANTHROPIC_API_KEY``. The other settings are those of :class:`RetryingBackend`.
    The messages API has no seed: ``GenerationSettings.seed`` is not sent.
    """

    provider = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"
    default_url = ANTHROPIC_URL

    def __init__(
        self,
        model: str,
        base_urls: Sequence[str] | str | None = None,
        *,
        api_key: str | None = None,
        policy: CallPolicy | None = None,
    ) -> None:
        self._sdk = anthropic_sdk()
        urls = url_list(base_urls) if base_urls else []
        if not urls and os.environ.get("ANTHROPIC_BASE_URL"):
            urls = url_list(os.environ["ANTHROPIC_BASE_URL"])
        urls = [sdk_base_url(u) for u in urls]
        official = not urls or any(urlsplit(u).hostname == "api.anthropic.com" for u in urls)
        key = api_key or os.environ.get(self.key_variable)
        if not key:
            if official:
                raise ConfigError(
                    f"no API key for the Anthropic model {model!r}: set the "
                    f"{self.key_variable} environment variable, or point at a server speaking "
                    "the Anthropic messages API with 'anthropic:<model>@http://host:port'"
                )
            key = PLACEHOLDER_KEY
        secrets = [key] if key != PLACEHOLDER_KEY else []
        super().__init__(model, urls, secrets=secrets, policy=policy)
        self._key = Secret(key)
        self._clients = {url: PerLoop(self._client_factory(url)) for url in self.urls}

    def _sdk_client(self, url: str | None, timeout: float) -> Any:
        """The SDK's client of one server (of the default one for None): no retry of its
        own, each reply read up to the policy's ``max_reply_bytes``
        (:mod:`cigeval.backends._reply_cap`)."""
        sdk = self._sdk
        return sdk.AsyncAnthropic(
            api_key=self._key.value,
            base_url=url or ANTHROPIC_URL,
            timeout=timeout,
            max_retries=0,
            # a judge call carries the key, the prompt and the images: never redirected
            http_client=sdk.DefaultAsyncHttpxClient(
                timeout=timeout,
                follow_redirects=False,
                headers=IDENTITY,
                event_hooks=reply_cap_hooks(
                    sdk.DefaultAsyncHttpxClient, self.policy.max_reply_bytes
                ),
            ),
        )

    def _client_factory(self, url: str | None) -> Any:
        def make() -> Any:
            return self._sdk_client(url, self.policy.timeout_s)

        return make

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The messages-API request body for ``request``.

        Only the reply length is sent of the generation settings: the messages API of the
        SDK's version (``anthropic-version: 2026-10-21``, SDK 2.x) refuses ``temperature``,
        ``top_p`` and ``top_k`` and has no seed, so Claude samples at its own default. The API
        has no default reply length: without ``max_tokens``, :data:`DEFAULT_MAX_TOKENS` is sent.
        """
        system, messages = to_anthropic_messages(request.messages)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.settings.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if system:
            body["system"] = system
        return body

    async def _attempt(self, request: ModelRequest, index: int) -> ModelResponse:
        url = self.urls[index]
        warn_once(
            logger,
            f"anthropic-sampling:{self.identity}",
            f"{self.identity}: the messages API takes no temperature, top_p or seed; Claude "
            "samples at its own default, so its judgments are not deterministic (identical "
            "requests are still answered from the response cache)",
        )
        message = await self._clients[url].get().messages.create(**self.payload(request))
        return read_message(message, self.model, self.public_endpoint(url))

    def _classify(self, exc: BaseException) -> CallFailure | None:
        return sdk_failure(exc, self._sdk)

    async def aclose(self) -> None:
        """Close the HTTP connections opened in the running event loop."""
        for clients in self._clients.values():
            client = clients.pop()
            if client is not None:
                await client.close()

    async def preflight(self) -> None:
        """Check every server of the spec answers and knows the model, within seconds.

        Asks for the model (``GET /v1/models/<model>``, which accepts Anthropic's aliases);
        a server without that route, or that does not list the name, gets a one-token
        messages request instead. Raises :class:`PreflightError` naming the fix.
        """
        timeout = min(self.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        for url in self.urls:
            where = public_url(url) if url else ANTHROPIC_URL
            await preflight_within(self._preflight_one(url), timeout, where)

    async def _preflight_one(self, url: str | None) -> None:
        sdk = self._sdk
        where = public_url(url) if url else ANTHROPIC_URL
        timeout = min(self.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        client = self._sdk_client(url, timeout)
        problem: str | None = None
        try:
            try:
                await client.models.retrieve(self.model)
                return
            except sdk.NotFoundError:
                pass  # an unknown name, or a server without the route: ask for one token
            await client.messages.create(
                model=self.model,
                max_tokens=1,
                messages=[{"role": "user", "content": "Reply with OK."}],
            )
        except (sdk.AuthenticationError, sdk.PermissionDeniedError) as exc:
            problem = (
                f"the server at {where} refused the API key (HTTP {exc.status_code}: "
                f"{self.redact(error_message(exc))}); set {self.key_variable} to a key it accepts"
            )
        except sdk.NotFoundError as exc:
            problem = (
                f"the server at {where} does not know the model {self.model!r} "
                f"({self.redact(error_message(exc))}): check the name after 'anthropic:' and "
                "the URL"
            )
        except sdk.APITimeoutError:
            problem = f"the judge server at {where} did not answer within {timeout:g} s"
        except sdk.APIConnectionError as exc:
            problem = f"the judge server at {where} cannot be reached ({self.redact(str(exc))})"
        except sdk.APIStatusError as exc:
            if exc.status_code >= 500:
                problem = (
                    f"the judge server at {where} answered HTTP {exc.status_code} to a one-token "
                    f"request ({self.redact(error_message(exc))}); wait until it is ready, or "
                    f"pass {in_callers_words('--no-preflight', 'preflight=False')} to start "
                    "anyway"
                )
            # any other 4xx (a refused one-token request, 429) proves the server is there
        finally:
            await client.close()
        if problem is not None:
            raise PreflightError(problem)


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """cigeval messages as the messages API takes them: the system text apart, then turns
    whose content is text and base64 image blocks (consecutive turns of one role merged, as
    the API wants them to alternate)."""
    system = "\n\n".join(m.text_content() for m in messages if m.role == "system")
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                if message.role == "assistant":
                    raise BackendError("assistant messages cannot carry images in the messages API")
                data = base64.b64encode(part.image.data).decode("ascii")
                source = {"type": "base64", "media_type": part.image.mime, "data": data}
                blocks.append({"type": "image", "source": source})
            elif part.text:
                blocks.append({"type": "text", "text": part.text})
        if turns and turns[-1]["role"] == message.role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": message.role, "content": blocks})
    return system, turns


def read_message(message: Any, default_model: str, endpoint: str) -> ModelResponse:
    """The reply text, served model, usage and finish reason of a messages-API reply.

    A reply withheld by the provider (stop reason ``refusal``) may carry no text: it is
    returned empty with the finish reason ``content_filter``. Any other reply without text
    is unreadable (retried).
    """
    texts = [b.text for b in getattr(message, "content", None) or [] if b.type == "text"]
    raw = getattr(message, "stop_reason", None)
    reason = normalize_finish_reason(_STOP_REASONS.get(str(raw), raw) if raw else raw)
    if not texts and reason != "content_filter":
        raise UnreadableReply(f"the reply has no text (stop reason {raw!r})")
    usage = Usage()
    counts = getattr(message, "usage", None)
    if counts is not None:
        names = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        parts = [v for v in (getattr(counts, n, None) for n in names) if v is not None]
        bad = [v for v in parts if token_count(v) is None]
        prompt = bad[0] if bad else sum(int(v) for v in parts)
        usage = checked_usage(prompt, getattr(counts, "output_tokens", None))
    model = getattr(message, "model", None) or default_model
    return ModelResponse("".join(texts), model, usage, finish_reason=reason, endpoint=endpoint)


def from_spec(
    rest: str, *, base_url: str | Sequence[str] | None = None, run_config: RunConfig | None = None
) -> AnthropicBackend:
    """The backend of an ``anthropic:<model>[@URL,URL...]`` spec (the part after the prefix)."""
    name, urls = model_and_urls("anthropic", rest, base_url)
    return AnthropicBackend(name, urls or None, policy=CallPolicy.from_run_config(run_config))
