"""Any OpenAI-compatible chat endpoint: OpenAI itself, vLLM, SGLang, Ollama, LM Studio, ...

Retries are ours, not the client's: the loop of :mod:`cigeval.backends._retrying`, by the
backend's :class:`~cigeval.backends.policy.CallPolicy`. Redirects are never followed. The API
key never appears in an error message, a repr or a log line.

The SDK (``openai``, and ``httpx`` under it) is imported when the first call, preflight or
SDK client needs it, not with this module: a run whose every answer is cached never loads it.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import logging
import os
import secrets
import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from cigeval._caller import in_callers_words
from cigeval.backends._reply_cap import IDENTITY, http_library, reply_cap_hooks
from cigeval.backends._retrying import (
    PREFLIGHT_TIMEOUT_S,
    CallFailure,
    PerLoop,
    RetryingBackend,
    Secret,
    preflight_within,
    sdk_failure,
)
from cigeval.backends._spec import model_and_urls, public_url
from cigeval.backends.policy import CallPolicy
from cigeval.backends.usage import checked_usage
from cigeval.config import RunConfig
from cigeval.errors import BackendError, ConfigError, PreflightError
from cigeval.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    TokenLogprob,
    Usage,
    normalize_finish_reason,
)

if TYPE_CHECKING:
    import httpx
    import openai

    from cigeval.images import EncodedImage

logger = logging.getLogger("cigeval.backends.openai")

#: Key sent to servers that need none (vLLM, Ollama, ...); the client insists on some key.
PLACEHOLDER_KEY = "EMPTY"
#: Where the official API lives (the endpoint recorded when no URL is given).
OPENAI_URL = "https://api.openai.com/v1"
#: Calls in flight per connection pool. httpx's pool probes every idle connection it holds
#: (a socket check each) whenever it hands one out, so one pool behind hundreds of calls
#: spends more CPU there than on the calls; pools of a few connections each keep that cost
#: flat (benchmarks/README.md measures both).
CALLS_PER_POOL = 16


class _MalformedReply(Exception):
    """HTTP succeeded but the body is not a usable chat completion."""


class OpenAIBackend(RetryingBackend):
    """A model behind the OpenAI chat-completions API.

    ``base_urls``: one URL, or several data-parallel replicas served round robin (each retry
    moves on to the next replica); default ``$OPENAI_BASE_URL`` or OpenAI itself. ``api_key``:
    default ``$OPENAI_API_KEY``; servers other than OpenAI get a placeholder when none is set.
    ``policy`` says how calls are timed, retried, limited and spaced. ``max_tokens_param``
    names the field for the reply length: OpenAI wants ``max_completion_tokens``, most other
    servers ``max_tokens`` (the default picks by endpoint).

    Providers that speak this API under another name (``gemini:``, ``azure:``) subclass it:
    ``provider`` prefixes the identity, ``key_variable`` is the environment variable named
    when a key is refused, ``batch_api`` says whether ``--batch`` may send its calls through
    the OpenAI Batch API, and :meth:`_new_client` builds the SDK client.
    """

    #: The prefix of the model spec and of :attr:`identity`.
    provider = "openai"
    #: The environment variable holding the key, named in errors about it.
    key_variable = "OPENAI_API_KEY"
    default_url = OPENAI_URL
    not_found_hint = " (check the model name and the base URL, which usually ends in /v1)"
    #: Whether ``--batch`` may send this backend's calls through the OpenAI Batch API.
    batch_api = True
    #: Whether the SDK client gets the request body already encoded (orjson bytes). A
    #: client that reads the body (Azure's picks the deployment's path from its model)
    #: gets it as a dict instead.
    encoded_body = True
    #: When set, each request asks for the reply's token log-probabilities with this many
    #: alternatives per token (``logprobs: true, top_logprobs: N``; OpenAI and vLLM answer
    #: them), returned in ``ModelResponse.logprobs``. Used by ``cigeval serve --score-mode
    #: expected`` (cigeval/serve/expected.py).
    top_logprobs: int | None = None

    def __init__(
        self,
        model: str,
        base_urls: Sequence[str] | str | None = None,
        *,
        api_key: str | None = None,
        policy: CallPolicy | None = None,
        max_tokens_param: str | None = None,
    ) -> None:
        if not model:
            raise ConfigError("OpenAIBackend needs a model name")
        if isinstance(base_urls, str):
            base_urls = [u.strip() for u in base_urls.split(",")]
        urls = [u for u in (base_urls or []) if u]
        if not urls and os.environ.get("OPENAI_BASE_URL"):
            urls = [os.environ["OPENAI_BASE_URL"]]
        official = not urls or any(urlsplit(u).hostname == "api.openai.com" for u in urls)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if official:
                raise ConfigError(
                    f"no API key for OpenAI model {model!r}: set the OPENAI_API_KEY environment "
                    "variable, or point at an OpenAI-compatible server with "
                    f"{in_callers_words('--base-url', 'base_url=')} / "
                    "'openai:<model>@http://host:8000/v1'"
                )
            key = PLACEHOLDER_KEY
        super().__init__(
            model, urls, secrets=[key] if key != PLACEHOLDER_KEY else [], policy=policy
        )
        self.max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if official else "max_tokens"
        )
        self._key = Secret(key)
        self._pool_turn = itertools.count()
        # httpx connection pools belong to one event loop: one set of SDK clients per loop,
        # a few per server URL (see CALLS_PER_POOL), all sharing one TLS context.
        self._clients: PerLoop[list[list[openai.AsyncOpenAI]]] = PerLoop(
            lambda: [[] for _ in self.urls]
        )

    @property
    def base_urls(self) -> list[str | None]:
        """The servers of the spec, in the order they are asked (``[None]``: OpenAI's)."""
        return self.urls

    def _client(self, index: int) -> openai.AsyncOpenAI:
        """An SDK client of server ``index`` in the running event loop, its pools taken in
        turn (each made on first use)."""
        clients = self._clients.get()
        with self._lock:
            # as many pools as the calls in flight allowed now need (the limit may widen)
            pools_wanted = -(-(self.call_limit.limit or 4 * CALLS_PER_POOL) // CALLS_PER_POOL)
            turn = next(self._pool_turn) % pools_wanted
            pools = clients[index]
            if turn >= len(pools):
                turn = len(pools)
                pools.append(self._new_client(self.urls[index]))
            return pools[turn]

    def _new_client(self, url: str | None) -> openai.AsyncOpenAI:
        """An SDK client for one server (it never retries: :meth:`complete` does)."""
        import openai

        return openai.AsyncOpenAI(
            api_key=self._key.value,
            base_url=url,
            timeout=self.policy.timeout_s,
            max_retries=0,
            http_client=self._http_client(url),
        )

    def _http_client(self, url: str | None) -> Any:
        """The SDK's HTTP client (with the SDK's defaults) for one server, using the TLS
        context this process shares (:func:`_tls_context`). It follows no redirect: a judge
        call carries the key, the prompt and the images, for the server named only. Each reply
        is read up to the policy's ``max_reply_bytes`` (:mod:`cigeval.backends._reply_cap`)."""
        import openai

        return openai.DefaultAsyncHttpxClient(
            timeout=self.policy.timeout_s,
            verify=_tls_context(url),
            follow_redirects=False,
            headers=IDENTITY,
            event_hooks=reply_cap_hooks(
                openai.DefaultAsyncHttpxClient, self.policy.max_reply_bytes
            ),
        )

    def sdk_client(self) -> openai.AsyncOpenAI:
        """An SDK client for the first server of the spec, bound to the running event loop
        (the batch path uploads files and manages batches with it; it never retries)."""
        return self._client(0)

    async def aclose(self) -> None:
        """Close the HTTP connections opened in the running event loop."""
        for pools in self._clients.pop() or []:
            for client in pools:
                await client.close()

    def payload(
        self, request: ModelRequest, *, image_url: Callable[[EncodedImage], str] | None = None
    ) -> dict[str, Any]:
        """The chat-completions request body for ``request`` (without the model's reply).

        ``image_url`` gives each image's URL (default: its data URI).
        """
        settings = request.settings
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m, image_url) for m in request.messages],
        }
        # a setting left at None is not sent: the provider's default applies
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            body[self.max_tokens_param] = settings.max_tokens
        if settings.seed is not None:
            body["seed"] = settings.seed
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if self.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        return body

    def request_body(self, request: ModelRequest) -> bytes:
        """:meth:`payload` as the JSON bytes sent: :meth:`request_chunks` joined."""
        return b"".join(self.request_chunks(request))

    def request_chunks(self, request: ModelRequest) -> list[bytes]:
        """:meth:`payload` as JSON bytes (:func:`encode_json`), in pieces that are sent one
        after another: the text between the images, and each image's data URI as a JSON
        string, the same bytes object for every request that shows the image
        (:attr:`~cigeval.images.EncodedImage.data_uri_json`, built once per encoded image).
        No request copies its images into a body of its own."""
        salt = secrets.token_hex(8)
        images: list[tuple[bytes, EncodedImage]] = []

        def placeholder(image: EncodedImage) -> str:
            token = f"cigeval-image:{salt}:{len(images)}"
            images.append((b'"' + token.encode("ascii") + b'"', image))
            return token

        body = encode_json(self.payload(request, image_url=placeholder))
        chunks: list[bytes] = []
        start = 0
        for marker, image in images:  # in the order they appear in the body
            at = body.index(marker, start)
            chunks += [body[start:at], image.data_uri_json]
            start = at + len(marker)
        chunks.append(body[start:])
        return chunks

    def _prepare(self, request: ModelRequest) -> list[bytes] | dict[str, Any]:
        return self.request_chunks(request) if self.encoded_body else self.payload(request)

    async def _attempt(self, prepared: list[bytes] | dict[str, Any], index: int) -> ModelResponse:
        # client.post with the body encoded once, rather than chat.completions.create:
        # create() walks the whole body against the SDK's TypedDicts, then encodes it with the
        # standard json module, some 10 ms of CPU per call with megabytes of images.
        completion = await _post_chat(self._client(index), prepared, self.policy.timeout_s)
        text, model, usage, finish_reason = _read_completion(completion, self.model)
        endpoint = self.public_endpoint(self.urls[index])
        logprobs = _token_logprobs(completion) if self.top_logprobs else None
        return ModelResponse(
            text, model, usage, finish_reason=finish_reason, endpoint=endpoint, logprobs=logprobs
        )

    def _ready(self) -> None:
        import openai
        from openai.types.chat import ChatCompletion  # noqa: F401  (imported: ready)

        _sdk_takes_content()
        for url in self.urls:
            _tls_context(url)
        openai.DefaultAsyncHttpxClient  # noqa: B018  (the SDK's HTTP library loaded)

    def _classify(self, exc: BaseException) -> CallFailure | None:
        # Anything the reply's reading raises is an unreadable reply here (retried), where
        # the SDK-only backends let a ValueError of their own through.
        import openai

        failure = sdk_failure(exc, openai)
        if failure is None and isinstance(exc, _MalformedReply | ValueError):
            return CallFailure(f"unreadable reply: {str(exc)[:300]}")
        return failure

    async def preflight(self) -> None:
        """Check every server of the spec answers and serves the model, within seconds.

        Asks ``GET /models`` (OpenAI, vLLM, SGLang, Ollama and LM Studio serve it); when the
        server lists models, the model name must be one of them. A server without that route
        gets a one-token chat request instead. Raises :class:`PreflightError` naming the fix.
        """
        import httpx

        timeout = min(self.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        headers = {"Authorization": f"Bearer {self._key.value}", **IDENTITY}
        capped = reply_cap_hooks(httpx.AsyncClient, self.policy.max_reply_bytes)
        async with httpx.AsyncClient(
            timeout=timeout, headers=headers, event_hooks=capped
        ) as client:
            for url in self.urls:
                where = public_url(url or OPENAI_URL)
                await preflight_within(
                    self._preflight_one(client, url or OPENAI_URL), timeout, where
                )

    async def _preflight_one(self, client: httpx.AsyncClient, url: str) -> None:
        import httpx

        where = public_url(url)
        try:
            listed = await client.get(url.rstrip("/") + "/models")
            if listed.status_code == 200:
                names = _served_models(listed)
                if names is not None:
                    if names and self.model not in names:
                        raise PreflightError(
                            f"the server at {where} does not serve the model {self.model!r}; "
                            f"it serves: {', '.join(_listed(names)[:20])}. Name one of them "
                            f"after '{self.provider}:' in {in_callers_words('--model', 'model=')}"
                        )
                    return
            elif listed.status_code in (401, 403):
                raise PreflightError(self._refused(where, listed))
            body = {
                "model": self.model,
                "messages": [{"role": "user", "content": "Reply with OK."}],
                self.max_tokens_param: 1,
            }
            chat = await client.post(url.rstrip("/") + "/chat/completions", json=body)
        except httpx.TimeoutException:
            raise PreflightError(
                f"the judge server at {where} did not answer within {client.timeout.read:g} s. "
                f"{_server_fix()}"
            ) from None
        except httpx.HTTPError as exc:
            detail = self.redact(f"{type(exc).__name__}: {exc}")[:200]
            raise PreflightError(
                f"the judge server at {where} cannot be reached ({detail}). {_server_fix()}"
            ) from None
        status = chat.status_code
        if status in (401, 403):
            raise PreflightError(self._refused(where, chat))
        if status == 404:
            raise PreflightError(
                f"the server at {where} answered HTTP 404 to a chat request for the model "
                f"{self.model!r} ({self.redact(_response_detail(chat))}): check the model "
                "name and the base URL, which usually ends in /v1"
            )
        if status >= 500:
            raise PreflightError(
                f"the judge server at {where} answered HTTP {status} to a one-token chat "
                f"request ({self.redact(_response_detail(chat))}); wait until it is ready, "
                f"or pass {in_callers_words('--no-preflight', 'preflight=False')} to start anyway"
            )
        # 200, or a 4xx that proves the server is there (429, a refused one-token request).

    def _refused(self, where: str, response: httpx.Response) -> str:
        return (
            f"the server at {where} refused the API key (HTTP {response.status_code}: "
            f"{self.redact(_response_detail(response))}); set {self.key_variable} to a key it "
            "accepts"
        )


def encode_json(payload: dict[str, Any]) -> bytes:
    """A request body as compact UTF-8 JSON, as the SDK writes it, encoded with orjson.

    Text orjson refuses (a lone surrogate) falls back to the standard json module with ASCII
    escapes, which keep it exactly.
    """
    try:
        return orjson.dumps(payload)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("ascii")


async def _post_chat(
    client: openai.AsyncOpenAI, body: list[bytes] | dict[str, Any], timeout: float
) -> Any:
    """POST a chat-completions body with the SDK client (its errors, its types): a dict, or
    the chunks of an encoded body (:meth:`OpenAIBackend.request_chunks`), sent one after
    another under their total Content-Length."""
    from openai.types.chat import ChatCompletion

    options: Any = {"timeout": timeout, "security": {"bearer_auth": True}}
    if isinstance(body, dict):
        return await client.post(
            "/chat/completions", body=body, cast_to=ChatCompletion, options=options
        )
    if not _sdk_takes_content():  # an older SDK sends a bytes body as it is
        return await client.post(
            "/chat/completions", body=b"".join(body), cast_to=ChatCompletion, options=options
        )
    options["headers"] = {"Content-Length": str(sum(len(chunk) for chunk in body))}
    return await client.post(
        "/chat/completions", content=_each(body), cast_to=ChatCompletion, options=options
    )


async def _each(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


@functools.lru_cache(maxsize=1)
def _sdk_takes_content() -> bool:
    """Whether the SDK's ``post`` takes a body already encoded as ``content``."""
    import openai

    return "content" in inspect.signature(openai.AsyncOpenAI.post).parameters


def _tls_context(url: str | None) -> ssl.SSLContext | bool:
    """The TLS context the SDK clients of this process share (see :func:`_shared_tls`)."""
    return _shared_tls(url is not None and urlsplit(url).scheme == "http")


@functools.lru_cache(maxsize=2)
def _shared_tls(plain_http: bool) -> ssl.SSLContext | bool:
    """For plain-HTTP servers a context with no certificate at all (HTTP never uses it, and
    a redirect to https fails verification instead of trusting anything); otherwise the
    context the SDK's HTTP library makes by default (system certificates,
    ``SSL_CERT_FILE``), made once per process instead of once per client. True when the
    library cannot make one (each client then makes its own).
    """
    if plain_http:
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    import openai

    # The HTTP library of the SDK's clients: httpx, or httpx2 in recent SDKs.
    library = http_library(openai.DefaultAsyncHttpxClient)
    make = getattr(library, "create_ssl_context", None)
    return make() if make is not None else True


def to_openai_message(
    message: Message, image_url: Callable[[EncodedImage], str] | None = None
) -> dict[str, Any]:
    """One cigeval message as an OpenAI chat message (images as base64 data URIs, or as
    ``image_url`` says)."""
    if message.role == "assistant":
        if message.images():
            raise BackendError("assistant messages cannot carry images in the OpenAI chat API")
        return {"role": "assistant", "content": message.text_content()}
    parts = message.parts
    if len(parts) == 1 and isinstance(parts[0], TextPart) and not message.listed:
        return {"role": message.role, "content": parts[0].text}
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ImagePart):
            url = image_url(part.image) if image_url is not None else part.image.data_uri()
            content.append({"type": "image_url", "image_url": {"url": url}})
        else:
            content.append({"type": "text", "text": part.text})
    return {"role": message.role, "content": content}


def _server_fix() -> str:
    """What to do about a judge server that is not there, in the caller's words."""
    return in_callers_words(
        "Start the server, or point at the right one with --base-url URL or "
        "'openai:<model>@URL' (--no-preflight skips this check)",
        "Start the server, or point at the right one with base_url=URL or "
        "model='openai:<model>@URL' (preflight=False skips this check)",
    )


def _served_models(response: httpx.Response) -> set[str] | None:
    """The model ids of a ``/models`` listing, or None when the body is not one.

    Gemini's OpenAI-compatible listing names models ``models/<name>`` while requests name
    them ``<name>``: both forms count as served.
    """
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    ids = {str(m["id"]) for m in data if isinstance(m, dict) and "id" in m}
    return ids | {i.removeprefix("models/") for i in ids}


def _listed(names: set[str]) -> list[str]:
    """Served names to quote in an error, without the ``models/`` doubles."""
    return sorted(n for n in names if not n.startswith("models/"))


def _response_detail(response: httpx.Response) -> str:
    """The error message of an HTTP error response, short."""
    try:
        body = response.json()
        error = body.get("error", body) if isinstance(body, dict) else body
        message = error.get("message") if isinstance(error, dict) else error
        return str(message)[:200]
    except ValueError:
        return response.text[:200]


def _read_completion(completion: object, default_model: str) -> tuple[str, str, Usage, str | None]:
    from openai.types.chat import ChatCompletion

    if not isinstance(completion, ChatCompletion):
        raise _MalformedReply(f"expected a chat completion, got {type(completion).__name__}")
    if not completion.choices:
        raise _MalformedReply("the reply has no choices")
    choice = completion.choices[0]
    message = choice.message
    text = message.content if message.content is not None else message.refusal
    reason = normalize_finish_reason(choice.finish_reason)
    if text is None:
        if reason != "content_filter":
            raise _MalformedReply("the reply has neither content nor a refusal")
        text = ""  # withheld by the provider's filter: the session says so
    counts = completion.usage
    usage = Usage()
    if counts is not None:
        usage = checked_usage(
            getattr(counts, "prompt_tokens", None), getattr(counts, "completion_tokens", None)
        )
    return text, completion.model or default_model, usage, reason


def _token_logprobs(completion: object) -> tuple[TokenLogprob, ...] | None:
    """The first choice's token log-probabilities, or None when the server sent none."""
    choice = completion.choices[0]  # type: ignore[attr-defined]
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    return tuple(
        TokenLogprob(t.token, t.logprob, tuple((a.token, a.logprob) for a in t.top_logprobs or ()))
        for t in content
    )


def read_completion(completion: object, default_model: str) -> tuple[str, str, Usage, str | None]:
    """The reply text, served model name, usage and finish reason of a chat completion.

    Raises ValueError when the completion is not usable (no choices, no content). The batch
    path reads its output lines with it, so a batched reply is read as a direct one is.
    """
    try:
        return _read_completion(completion, default_model)
    except _MalformedReply as exc:
        raise ValueError(str(exc)) from None


def from_spec(
    rest: str, *, base_url: str | Sequence[str] | None = None, run_config: RunConfig | None = None
) -> OpenAIBackend:
    """The backend of an ``openai:<model>[@URL,URL...]`` spec (the part after ``openai:``)."""
    name, urls = model_and_urls("openai", rest, base_url)
    return OpenAIBackend(name, urls or None, policy=CallPolicy.from_run_config(run_config))
