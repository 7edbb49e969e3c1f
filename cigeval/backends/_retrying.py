"""The one retry loop of every HTTP backend (``openai:``, ``azure:``, ``gemini:``,
``anthropic:``, ``litellm:``): retries with backoff, calls in flight, rate limits, round robin
over replicas, the failure text and errors without secrets.

Exponential backoff with jitter on 429 (honouring ``Retry-After`` / ``retry-after-ms`` up to
:attr:`CallPolicy.max_retry_after_s`), 408/409/5xx, timeouts, dropped connections and replies
that cannot be read, within :attr:`CallPolicy.retry_wait_budget_s` of waiting per call; other
4xx errors and redirects fail at once; the API key never appears in an error. A subclass says
how to make one attempt and how to read its SDK's exceptions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any, Generic, TypeVar
from urllib.parse import urljoin, urlsplit

from cigeval._caller import in_callers_words
from cigeval.backends._spec import endpoint_url, public_url
from cigeval.backends.limits import InFlightLimit, estimate_tokens
from cigeval.backends.observers import current_observers
from cigeval.backends.policy import CallPolicy
from cigeval.errors import BackendError, ConfigError, PreflightError, TransportError
from cigeval.messages import ModelRequest, ModelResponse
from cigeval.redact import redact_known, remember_secret, remember_url_secrets

logger = logging.getLogger("cigeval.backends")

#: The longest a preflight request may take, in seconds.
PREFLIGHT_TIMEOUT_S = 10.0
#: A preflight's requests to one server (a listing, then a one-token request) at most.
PREFLIGHT_REQUESTS = 2
RETRYABLE_STATUS = frozenset({408, 409, 429})
#: How the loop waits between attempts (a test counts the waits by replacing it).
_sleep = asyncio.sleep

T = TypeVar("T")


class UnreadableReply(ValueError):
    """HTTP succeeded but the body is not a usable reply (retried like a transient failure)."""


async def preflight_within(check: Awaitable[None], timeout_s: float, where: str) -> None:
    """``check`` (a preflight's requests to the server at ``where``, each allowed
    ``timeout_s`` per read) under one deadline for all of them: a server that trickles its
    answer byte by byte passes every per-read timeout, and one whose answer passes the reply
    cap (:mod:`cigeval.backends._reply_cap`) would be read without end; each is a
    :class:`~cigeval.errors.PreflightError` naming the server."""
    deadline = PREFLIGHT_REQUESTS * timeout_s
    try:
        await asyncio.wait_for(check, deadline)
    except asyncio.TimeoutError:
        raise PreflightError(
            f"the judge server at {where} did not finish answering the preflight check "
            f"within {deadline:g} s (a server that sends its answer byte by byte?); "
            f"{in_callers_words('--no-preflight', 'preflight=False')} skips this check"
        ) from None
    except UnreadableReply as exc:
        raise PreflightError(
            f"the judge server at {where} answered the preflight check with a reply that "
            f"cannot be read: {str(exc)[:200]}"
        ) from None


@dataclass(frozen=True)
class CallFailure:
    """Why one attempt failed: ``detail`` (not yet redacted), the HTTP ``status`` when there
    was one, whether another attempt may succeed, and the wait the server asked for."""

    detail: str
    status: int = 0
    retryable: bool = True
    retry_after: float | None = None
    #: Why no server served the request (connection, timeout, server_error, rate_limited),
    #: or None.
    transport: str | None = None


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def sdk_failure(exc: BaseException, sdk: ModuleType) -> CallFailure | None:
    """Read an exception of a Stainless-generated SDK (``openai``, ``anthropic``; LiteLLM's
    exceptions subclass ``openai``'s). None when ``exc`` is none of its API errors."""
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        response = getattr(exc, "response", None)
        if 300 <= status < 400:
            return CallFailure(redirect_detail(status, response), status, retryable=False)
        retryable = status in RETRYABLE_STATUS or status >= 500
        wait = retry_after_seconds(getattr(response, "headers", None)) if retryable else None
        transport = "server_error" if status >= 500 else "rate_limited" if status == 429 else None
        return CallFailure(
            f"HTTP {status}: {error_message(exc)}", status, retryable, wait, transport
        )
    if isinstance(exc, sdk.APITimeoutError):
        return CallFailure("timed out", transport="timeout")
    if isinstance(exc, sdk.APIConnectionError):
        return CallFailure(f"connection failed: {connection_detail(exc)}", transport="connection")
    if isinstance(exc, sdk.APIResponseValidationError | UnreadableReply):
        return CallFailure(f"unreadable reply: {str(exc)[:300]}")
    return None


def redirect_detail(status: int, response: Any) -> str:
    """What a redirect answer to a judge call says, in words: its target, and whether that is
    another origin. Judge calls never follow one (the request carries the key, the prompt and
    the images)."""
    request = getattr(response, "request", None)
    source = str(getattr(request, "url", "") or "")
    location = getattr(response, "headers", {}).get("location") or ""
    if not location:
        return f"HTTP {status}: the server answered with a redirect without a target"
    target = urljoin(source, location)
    other = _origin(target) != _origin(source)
    where = "another origin" if other else "the same server"
    return (
        f"HTTP {status}: the server redirected the call to {public_url(target)} ({where}); "
        "judge calls never follow redirects: give the final URL as the server URL"
    )


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, port


#: What the exceptions of the SDKs' HTTP library mean, as sentences (by class name, so that
#: httpx and its successors read alike).
_TRANSPORT_WORDS = {
    "ConnectError": "the connection could not be opened (refused, or no such host)",
    "ConnectTimeout": "the connection could not be opened in time",
    "ReadError": "the connection broke while reading the reply",
    "WriteError": "the connection broke while sending the request",
    "RemoteProtocolError": "the server closed the connection or broke the HTTP protocol",
    "LocalProtocolError": "the request could not be sent as valid HTTP",
    "ProxyError": "the proxy refused the connection",
    "UnsupportedProtocol": "the URL's scheme is not http or https",
    "StreamConsumed": "the request body was already sent and cannot be sent again",
    "StreamClosed": "the request body was closed before it was sent",
    "TooManyRedirects": "the server redirected too many times",
}


def connection_detail(exc: BaseException) -> str:
    """Why a connection failed, as a sentence: what the SDK's HTTP library said it was
    (:data:`_TRANSPORT_WORDS`), or its short message when it is none of those."""
    cause = exc.__cause__ or exc.__context__
    for error in (cause, exc):
        if error is not None and type(error).__name__ in _TRANSPORT_WORDS:
            return _TRANSPORT_WORDS[type(error).__name__]
    if cause is None:
        return str(exc)[:200]
    return f"{exc} ({type(cause).__name__}: {str(cause)[:200]})"


def error_message(exc: BaseException) -> str:
    """The provider's error message of an SDK status error, short."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        return str(message)[:300]
    return str(getattr(exc, "message", exc))[:300]


class Secret:
    """Holds a credential; its repr never shows it."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "Secret('***')"


class PerLoop(Generic[T]):
    """One object per running event loop (SDK clients hold connection pools bound to a loop).

    A backend built once may serve several ``asyncio.run`` calls (Jupyter, sync wrappers).
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._items: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> T:
        """The object of the running loop, made on first use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                item = self._items[loop] = self._factory()
            return item

    def pop(self) -> T | None:
        """Forget (and return) the running loop's object, if any."""
        with self._lock:
            return self._items.pop(asyncio.get_running_loop(), None)


class RetryingBackend:
    """Base of an API backend: retries, limits and rounds robin its calls by its ``policy``.

    Subclasses set :attr:`provider` and :attr:`key_variable`, and implement :meth:`_attempt`
    (one call to one server, returning the answer without latency) and :meth:`_classify`
    (the :class:`CallFailure` of an exception of their SDK, None for anything else, which is
    then raised as it is); :meth:`_prepare` may build the request body once for all
    attempts. ``urls`` are the replicas (``[None]``: the provider's default); each of
    ``secrets`` is redacted from every message.
    """

    provider = "api"
    key_variable = "API_KEY"
    #: Where the provider lives when no URL is given (recorded as the endpoint).
    default_url = ""
    #: What a failure with HTTP 404 adds to its message.
    not_found_hint = " (check the model name and the server URL)"

    def __init__(
        self,
        model: str,
        urls: Sequence[str | None],
        *,
        secrets: Sequence[str] = (),
        policy: CallPolicy | None = None,
    ) -> None:
        if not model:
            raise ConfigError(f"a {self.provider}: judge needs a model name")
        self.model = model
        self.urls: list[str | None] = list(urls) or [None]
        self.policy = policy or CallPolicy()
        self._secrets = [Secret(s) for s in secrets if s]
        for secret in secrets:  # echoed in a reply, it is redacted there too
            remember_secret(secret)
        for url in self.urls:
            remember_url_secrets(url)
        #: The calls in flight at once: the policy's ``max_in_flight`` until widened
        #: (:func:`~cigeval.backends.policy.widen_calls_in_flight`).
        self.call_limit = InFlightLimit(self.policy.max_in_flight)
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._is_ready = False

    @property
    def identity(self) -> str:
        """``<provider>:<model>`` (the URL and key are not part of it)."""
        return f"{self.provider}:{self.model}"

    @property
    def endpoint(self) -> str:
        """The server set, without credentials: the URLs of the replicas, sorted and joined by
        commas. Part of every cache key and every record, so a second server serving the same
        model name is asked, never answered from the first one's cache."""
        return ",".join(sorted({self.public_endpoint(u) for u in self.urls}))

    def public_endpoint(self, url: str | None) -> str:
        """``url`` as recorded; the provider's own URL when it is None."""
        return endpoint_url(url) if url else self.default_url

    def __repr__(self) -> str:
        urls = [public_url(u) if u else self.default_url for u in self.urls]
        return f"{type(self).__name__}(model={self.model!r}, urls={urls!r})"

    def _prepare(self, request: ModelRequest) -> Any:
        """What :meth:`_attempt` sends for ``request``, made once per call (default: the
        request itself)."""
        return request

    async def _attempt(self, prepared: Any, index: int) -> ModelResponse:
        """One call with ``prepared`` (:meth:`_prepare`) to the server ``self.urls[index]``;
        raise the SDK's errors or UnreadableReply."""
        raise NotImplementedError

    def _classify(self, exc: BaseException) -> CallFailure | None:
        """The failure an SDK exception stands for, or None when it is not the SDK's."""
        raise NotImplementedError

    def _ready(self) -> None:
        """Make what every attempt needs, once, before the first attempt's deadline starts
        (the SDK imported: seconds on a busy machine that no server should be blamed for)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``, retrying transient failures; raise BackendError when they persist.

        The response's ``latency_s`` covers the whole call, retries and rate-limit waits included.
        """
        started = time.perf_counter()
        policy = self.policy
        limiter = policy.rate_limiter
        prepared = self._prepare(request)
        estimate = 0
        if limiter is not None and limiter.tokens_per_minute:
            estimate = estimate_tokens(
                [m.text_content() for m in request.messages],
                [(i.width, i.height) for m in request.messages for i in m.images()],
                request.settings.max_tokens,
            )
        observers = current_observers()
        if not self._is_ready:
            self._ready()
            self._is_ready = True
        attempts, waited = 0, 0.0
        while True:
            attempts += 1
            with self._lock:
                index = next(self._turn) % len(self.urls)
            failure: CallFailure | None = None
            try:
                async with self.call_limit.slot():
                    if limiter is not None:
                        await limiter.acquire(estimate)
                    # The SDKs never retry (their retries are off): one attempt is one HTTP
                    # request, counted for the sample's usage.
                    observers.attempt_sent()
                    # one deadline for all of the attempt: a reply trickling in byte by
                    # byte passes every per-read timeout of the HTTP library
                    response = await asyncio.wait_for(
                        self._attempt(prepared, index), policy.timeout_s
                    )
            except asyncio.TimeoutError:
                failure = CallFailure("timed out", transport="timeout")
            except Exception as exc:
                failure = self._classify(exc)
                if failure is None:
                    raise
            else:
                observers.attempt_ended(None)
                if limiter is not None:
                    limiter.settle(estimate, response.usage.total_tokens)
                latency = time.perf_counter() - started
                # a key the server echoes is never cached, recorded or reported
                text, model = self.redact(response.text), self.redact(response.model)
                return dataclasses.replace(response, text=text, model=model, latency_s=latency)
            detail = self.redact(failure.detail)
            if failure.transport == "timeout":
                detail = f"timed out after {policy.timeout_s:g} s"
            observers.attempt_ended(failure.transport, detail)  # the breaker's watch
            budget = policy.retry_wait_budget_s
            delay = policy.delay(attempts, failure.retry_after)
            if failure.retryable and attempts <= policy.max_retries:
                if waited + delay <= budget:
                    logger.debug(
                        "%s attempt %d failed (%s); retrying in %.2f s",
                        self.identity,
                        attempts,
                        detail,
                        delay,
                    )
                    waited += delay
                    await _sleep(delay)
                    continue
                option = in_callers_words("--retry-wait-budget-s", "retry_wait_budget_s")
                detail += (
                    f"; the next wait ({delay:.3g} s) would pass the {budget:g} s one call may "
                    f"wait in all ({option})"
                )
            if failure.status == 429:
                detail += self._rate_limited(failure.retry_after)
            # Raised here, outside the except clause, so that the SDK's exception (whose
            # request still holds the credentials) is not chained as __context__.
            message = self._failure_message(index, attempts, detail, failure.status)
            if failure.transport is not None:
                raise TransportError(message, failure.transport)
            raise BackendError(message)

    def _rate_limited(self, asked: float | None) -> str:
        """The rate limit in words, for a call that ends on HTTP 429."""
        cap = self.policy.max_retry_after_s
        said = "" if asked is None else f"; it asked to wait {asked:g} s (Retry-After)"
        if asked is not None and asked > cap:
            honoured = in_callers_words("--max-retry-after-s", "max_retry_after_s")
            said += f", longer than the {cap:g} s honoured ({honoured})"
        return f" (rate limited: the server refused the call with HTTP 429{said})"

    def _failure_message(self, index: int, attempts: int, detail: str, status: int) -> str:
        url = self.urls[index]
        where = public_url(url) if url else self.default_url
        hint = {
            401: f" (check {self.key_variable} or the api_key given)",
            403: " (the key is not allowed to use this model)",
            404: self.not_found_hint,
        }.get(status, "")
        tries = "attempt" if attempts == 1 else "attempts"
        return f"{self.identity} at {where} failed after {attempts} {tries}: {detail}{hint}"

    def redact(self, text: str) -> str:
        """``text`` with every secret (the API key, and any other the process knows:
        :func:`~cigeval.redact.remember_secret`) replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret.value, "***")
        return redact_known(text)
