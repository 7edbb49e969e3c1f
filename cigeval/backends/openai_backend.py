"""Any OpenAI-compatible chat endpoint: OpenAI itself, vLLM, SGLang, Ollama, LM Studio, ...

Retries are ours, not the client's: exponential backoff with jitter on 429 (honouring
``Retry-After`` / ``retry-after-ms``), 408/409/5xx, timeouts, dropped connections and replies
that cannot be read. Other 4xx errors fail at once. The API key never appears in an error
message, a repr or a log line.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import json
import logging
import os
import random
import secrets
import ssl
import sys
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import openai
import orjson
from openai.types.chat import ChatCompletion

from cigeval.backends._retrying import Secret, error_message, retry_after_seconds
from cigeval.backends._spec import call_settings, endpoint_url, model_and_urls, public_url
from cigeval.backends.attempts import note_http_attempt
from cigeval.backends.limits import InFlightLimit, RateLimiter, estimate_tokens
from cigeval.backends.reachability import note_attempt
from cigeval.config import RunConfig
from cigeval.errors import BackendError, ConfigError, PreflightError, TransportError
from cigeval.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    Usage,
    normalize_finish_reason,
)

if TYPE_CHECKING:
    from cigeval.images import EncodedImage

logger = logging.getLogger("cigeval.backends.openai")

#: Key sent to servers that need none (vLLM, Ollama, ...); the client insists on some key.
PLACEHOLDER_KEY = "EMPTY"
#: Where the official API lives (the endpoint recorded when no URL is given).
OPENAI_URL = "https://api.openai.com/v1"
#: The longest a preflight request may take, in seconds.
PREFLIGHT_TIMEOUT_S = 10.0
#: The longest server-requested wait honoured before retrying, in seconds.
MAX_RETRY_AFTER_S = 120.0
#: Calls in flight per connection pool. httpx's pool probes every idle connection it holds
#: (a socket check each) whenever it hands one out, so one pool behind hundreds of calls
#: spends more CPU there than on the calls; pools of a few connections each keep that cost
#: flat (benchmarks/README.md measures both).
CALLS_PER_POOL = 16
_RETRYABLE_STATUS = {408, 409, 429}


class _MalformedReply(Exception):
    """HTTP succeeded but the body is not a usable chat completion."""


class OpenAIBackend:
    """A model behind the OpenAI chat-completions API.

    ``base_urls``: one URL, or several data-parallel replicas served round robin (each retry
    moves on to the next replica); default ``$OPENAI_BASE_URL`` or OpenAI itself. ``api_key``:
    default ``$OPENAI_API_KEY``; servers other than OpenAI get a placeholder when none is set.
    ``timeout_s`` bounds each attempt; ``max_retries`` counts retries after the first attempt;
    ``max_in_flight`` caps concurrent calls; ``rate_limiter`` spaces them. ``max_tokens_param``
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
    #: Whether ``--batch`` may send this backend's calls through the OpenAI Batch API.
    batch_api = True
    #: Whether the SDK client gets the request body already encoded (orjson bytes). A
    #: client that reads the body (Azure's picks the deployment's path from its model)
    #: gets it as a dict instead.
    encoded_body = True

    def __init__(
        self,
        model: str,
        base_urls: Sequence[str] | str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        max_in_flight: int | None = None,
        rate_limiter: RateLimiter | None = None,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
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
                    "variable, or point at an OpenAI-compatible server with --base-url / "
                    "'openai:<model>@http://host:8000/v1'"
                )
            key = PLACEHOLDER_KEY
        if max_retries < 0 or timeout_s <= 0:
            raise ConfigError("max_retries must be >= 0 and timeout_s > 0")
        self.model = model
        self.base_urls: list[str | None] = list(urls) or [None]
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.rate_limiter = rate_limiter
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if official else "max_tokens"
        )
        self._key = Secret(key)
        self._in_flight = InFlightLimit(max_in_flight)
        self._turn = itertools.count()
        self._pool_turn = itertools.count()
        self._pools = -(-(max_in_flight or 4 * CALLS_PER_POOL) // CALLS_PER_POOL)
        self._lock = threading.Lock()
        # httpx connection pools belong to one event loop: one set of SDK clients per loop,
        # a few per server URL (see CALLS_PER_POOL), all sharing one TLS context.
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, list[list[openai.AsyncOpenAI]]
        ] = weakref.WeakKeyDictionary()

    @property
    def identity(self) -> str:
        """``openai:<model>`` (the URL and key are not part of it)."""
        return f"{self.provider}:{self.model}"

    @property
    def endpoint(self) -> str:
        """The server set, without credentials: the URLs of the replicas, sorted and joined by
        commas. Part of every cache key and every record, so a second server serving the same
        model name is asked, never answered from the first one's cache."""
        return ",".join(sorted({_endpoint_url(u) for u in self.base_urls}))

    def __repr__(self) -> str:
        urls = [_public_url(u) if u else OPENAI_URL for u in self.base_urls]
        return f"OpenAIBackend(model={self.model!r}, base_urls={urls!r})"

    def _client(self, index: int) -> openai.AsyncOpenAI:
        """An SDK client of server ``index`` in the running event loop, its pools taken in
        turn (each made on first use)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            turn = next(self._pool_turn) % self._pools
            clients = self._clients.get(loop)
            if clients is None:
                clients = self._clients[loop] = [[] for _ in self.base_urls]
            pools = clients[index]
            if turn >= len(pools):
                turn = len(pools)
                pools.append(self._new_client(self.base_urls[index]))
            return pools[turn]

    def _new_client(self, url: str | None) -> openai.AsyncOpenAI:
        """An SDK client for one server (it never retries: :meth:`complete` does)."""
        return openai.AsyncOpenAI(
            api_key=self._key.value,
            base_url=url,
            timeout=self.timeout_s,
            max_retries=0,
            http_client=self._http_client(url),
        )

    def _http_client(self, url: str | None) -> Any:
        """The SDK's HTTP client (with the SDK's defaults) for one server, using the TLS
        context this process shares (:func:`_tls_context`)."""
        return openai.DefaultAsyncHttpxClient(timeout=self.timeout_s, verify=_tls_context(url))

    def sdk_client(self) -> openai.AsyncOpenAI:
        """An SDK client for the first server of the spec, bound to the running event loop
        (the batch path uploads files and manages batches with it; it never retries)."""
        return self._client(0)

    async def aclose(self) -> None:
        """Close the HTTP connections opened in the running event loop."""
        clients = self._clients.pop(asyncio.get_running_loop(), [])
        for pools in clients:
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

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``, retrying transient failures; raise BackendError when they persist.

        The response's ``latency_s`` covers the whole call, retries and rate-limit waits included.
        """
        started = time.perf_counter()
        body: list[bytes] | dict[str, Any] = (
            self.request_chunks(request) if self.encoded_body else self.payload(request)
        )
        estimate = 0
        if self.rate_limiter is not None and self.rate_limiter.tokens_per_minute:
            estimate = estimate_tokens(
                [m.text_content() for m in request.messages],
                [(i.width, i.height) for m in request.messages for i in m.images()],
                request.settings.max_tokens,
            )
        attempts = 0
        last_error = "no attempt made"
        transport: str | None = None  # why the last attempt could not reach the server
        while True:
            attempts += 1
            with self._lock:
                index = next(self._turn) % len(self.base_urls)
            url = self.base_urls[index]
            retry_after: float | None = None
            fatal_status = 0
            transport = None
            try:
                async with self._in_flight.slot():
                    if self.rate_limiter is not None:
                        await self.rate_limiter.acquire(estimate)
                    # client.post with the body encoded once, rather than
                    # chat.completions.create: create() walks the whole body against the SDK's
                    # TypedDicts, then encodes it with the standard json module, some 10 ms of
                    # CPU per call with megabytes of images.
                    # The SDK client never retries (max_retries=0): each pass of this loop is
                    # exactly one HTTP request, counted for the sample's usage.
                    note_http_attempt()
                    completion = await _post_chat(self._client(index), body, self.timeout_s)
                text, model, usage, finish_reason = _read_completion(completion, self.model)
            except openai.APIStatusError as exc:
                status = exc.status_code
                last_error = f"HTTP {status}: {self._redact(error_message(exc))}"
                if status not in _RETRYABLE_STATUS and status < 500:
                    fatal_status = status
                else:
                    retry_after = retry_after_seconds(exc.response.headers)
                    transport = "server_error" if status >= 500 else None
            except openai.APITimeoutError:
                last_error = f"timed out after {self.timeout_s:g} s"
                transport = "timeout"
            except openai.APIConnectionError as exc:
                last_error = f"connection failed: {self._redact(_cause_text(exc))}"
                transport = "connection"
            except (_MalformedReply, openai.APIResponseValidationError, ValueError) as exc:
                last_error = f"unreadable reply: {self._redact(str(exc))[:300]}"
            else:
                note_attempt(None)
                if self.rate_limiter is not None:
                    self.rate_limiter.settle(estimate, usage.total_tokens)
                return ModelResponse(
                    text,
                    model,
                    usage,
                    time.perf_counter() - started,
                    finish_reason=finish_reason,
                    endpoint=_endpoint_url(url),
                )
            note_attempt(transport, last_error)  # for the run's circuit breaker
            # Raised here, outside the except clauses, so that the client's exception (whose
            # request still holds the Authorization header) is not chained as __context__.
            if fatal_status:
                raise BackendError(self._failure(url, attempts, last_error, fatal_status))
            if attempts > self.max_retries:
                failure = self._failure(url, attempts, last_error)
                if transport is not None:
                    raise TransportError(failure, transport)
                raise BackendError(failure)
            delay = self._delay(attempts, retry_after)
            logger.debug(
                "%s attempt %d failed (%s); retrying in %.2f s",
                self.identity,
                attempts,
                last_error,
                delay,
            )
            await asyncio.sleep(delay)

    async def preflight(self) -> None:
        """Check every server of the spec answers and serves the model, within seconds.

        Asks ``GET /models`` (OpenAI, vLLM, SGLang, Ollama and LM Studio serve it); when the
        server lists models, the model name must be one of them. A server without that route
        gets a one-token chat request instead. Raises :class:`PreflightError` naming the fix.
        """
        timeout = min(self.timeout_s, PREFLIGHT_TIMEOUT_S)
        headers = {"Authorization": f"Bearer {self._key.value}"}
        async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
            for url in self.base_urls:
                await self._preflight_one(client, url or OPENAI_URL)

    async def _preflight_one(self, client: httpx.AsyncClient, url: str) -> None:
        where = _public_url(url)
        try:
            listed = await client.get(url.rstrip("/") + "/models")
            if listed.status_code == 200:
                names = _served_models(listed)
                if names is not None:
                    if names and self.model not in names:
                        raise PreflightError(
                            f"the server at {where} does not serve the model {self.model!r}; "
                            f"it serves: {', '.join(_listed(names)[:20])}. Name one of them "
                            f"after '{self.provider}:' in --model"
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
                f"{_SERVER_FIX}"
            ) from None
        except httpx.HTTPError as exc:
            detail = self._redact(f"{type(exc).__name__}: {exc}")[:200]
            raise PreflightError(
                f"the judge server at {where} cannot be reached ({detail}). {_SERVER_FIX}"
            ) from None
        status = chat.status_code
        if status in (401, 403):
            raise PreflightError(self._refused(where, chat))
        if status == 404:
            raise PreflightError(
                f"the server at {where} answered HTTP 404 to a chat request for the model "
                f"{self.model!r} ({self._redact(_response_detail(chat))}): check the model "
                "name and the base URL, which usually ends in /v1"
            )
        if status >= 500:
            raise PreflightError(
                f"the judge server at {where} answered HTTP {status} to a one-token chat "
                f"request ({self._redact(_response_detail(chat))}); wait until it is ready, "
                "or pass --no-preflight to start anyway"
            )
        # 200, or a 4xx that proves the server is there (429, a refused one-token request).

    def _refused(self, where: str, response: httpx.Response) -> str:
        return (
            f"the server at {where} refused the API key (HTTP {response.status_code}: "
            f"{self._redact(_response_detail(response))}); set {self.key_variable} to a key it "
            "accepts"
        )

    def _delay(self, attempts: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S) * random.uniform(1.0, 1.1)
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempts - 1))
        return ceiling * random.uniform(0.5, 1.0)

    def _failure(self, url: str | None, attempts: int, error: str, status: int = 0) -> str:
        where = _public_url(url) if url else OPENAI_URL
        hint = {
            401: f" (check {self.key_variable} or the api_key given)",
            403: " (the key is not allowed to use this model)",
            404: " (check the model name and the base URL, which usually ends in /v1)",
        }.get(status, "")
        tries = "attempt" if attempts == 1 else "attempts"
        return f"{self.identity} at {where} failed after {attempts} {tries}: {error}{hint}"

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***`` (for messages built outside)."""
        return self._redact(text)

    def _redact(self, text: str) -> str:
        key = self._key.value
        return text.replace(key, "***") if key != PLACEHOLDER_KEY else text


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
    # The HTTP library of the SDK's clients: httpx, or httpx2 in recent SDKs.
    library = sys.modules[openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0]]
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
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return {"role": message.role, "content": parts[0].text}
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ImagePart):
            url = image_url(part.image) if image_url is not None else part.image.data_uri()
            content.append({"type": "image_url", "image_url": {"url": url}})
        else:
            content.append({"type": "text", "text": part.text})
    return {"role": message.role, "content": content}


_SERVER_FIX = (
    "Start the server, or point at the right one with --base-url URL or "
    "'openai:<model>@URL' (--no-preflight skips this check)"
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
    if not isinstance(completion, ChatCompletion):
        raise _MalformedReply(f"expected a chat completion, got {type(completion).__name__}")
    if not completion.choices:
        raise _MalformedReply("the reply has no choices")
    choice = completion.choices[0]
    message = choice.message
    text = message.content if message.content is not None else message.refusal
    if text is None:
        raise _MalformedReply("the reply has neither content nor a refusal")
    usage = Usage()
    if completion.usage is not None:
        usage = Usage(completion.usage.prompt_tokens or 0, completion.usage.completion_tokens or 0)
    return (
        text,
        completion.model or default_model,
        usage,
        normalize_finish_reason(choice.finish_reason),
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


def public_endpoint(url: str | None) -> str:
    """``url`` as recorded in a reply: no credentials, query or fragment, no trailing slash."""
    return _endpoint_url(url)


def _cause_text(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{exc}" + (f" ({type(cause).__name__}: {cause})" if cause else "")


def _endpoint_url(url: str | None) -> str:
    """``url`` as recorded (no credentials, query, fragment or trailing slash); OpenAI's own
    URL when none is given."""
    return endpoint_url(url) if url else OPENAI_URL


def _public_url(url: str) -> str:
    return public_url(url)


def from_spec(
    rest: str, *, base_url: str | Sequence[str] | None = None, run_config: RunConfig | None = None
) -> OpenAIBackend:
    """The backend of an ``openai:<model>[@URL,URL...]`` spec (the part after ``openai:``)."""
    name, urls = model_and_urls("openai", rest, base_url)
    return OpenAIBackend(name, urls or None, **call_settings(run_config))
