"""The call policy of the SDK-based API backends (``anthropic:``, ``litellm:``): retries with
backoff, calls in flight, rate limits, round robin over replicas and errors without secrets.

It is the policy ``OpenAIBackend`` follows: exponential backoff with jitter on 429 (honouring
``Retry-After`` / ``retry-after-ms``), 408/409/5xx, timeouts, dropped connections and replies
that cannot be read; other 4xx errors fail at once; the API key never appears in an error.
A subclass says how to make one attempt and how to read its SDK's exceptions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import random
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any, Generic, TypeVar

from cigeval.backends._spec import endpoint_url, public_url
from cigeval.backends.attempts import note_http_attempt
from cigeval.backends.limits import InFlightLimit, RateLimiter, estimate_tokens
from cigeval.errors import BackendError, ConfigError
from cigeval.messages import ModelRequest, ModelResponse

logger = logging.getLogger("cigeval.backends")

#: The longest server-requested wait honoured before retrying, in seconds.
MAX_RETRY_AFTER_S = 120.0
#: The longest a preflight request may take, in seconds.
PREFLIGHT_TIMEOUT_S = 10.0
RETRYABLE_STATUS = frozenset({408, 409, 429})

T = TypeVar("T")


class UnreadableReply(ValueError):
    """HTTP succeeded but the body is not a usable reply (retried like a transient failure)."""


@dataclass(frozen=True)
class CallFailure:
    """Why one attempt failed: ``detail`` (not yet redacted), the HTTP ``status`` when there
    was one, whether another attempt may succeed, and the wait the server asked for."""

    detail: str
    status: int = 0
    retryable: bool = True
    retry_after: float | None = None


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
        retryable = status in RETRYABLE_STATUS or status >= 500
        response = getattr(exc, "response", None)
        wait = retry_after_seconds(getattr(response, "headers", None)) if retryable else None
        return CallFailure(f"HTTP {status}: {error_message(exc)}", status, retryable, wait)
    if isinstance(exc, sdk.APITimeoutError):
        return CallFailure("timed out")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f"{exc}" + (f" ({type(cause).__name__}: {cause})" if cause else "")
        return CallFailure(f"connection failed: {detail}")
    if isinstance(exc, sdk.APIResponseValidationError | UnreadableReply):
        return CallFailure(f"unreadable reply: {str(exc)[:300]}")
    return None


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
    """Base of an API backend that retries, limits and rounds robin its calls.

    Subclasses set :attr:`provider` and :attr:`key_variable`, and implement :meth:`_attempt`
    (one call to one server, returning the answer without latency) and :meth:`_classify`
    (the :class:`CallFailure` of an exception of their SDK, None for anything else, which is
    then raised as it is). ``urls`` are the replicas (``[None]``: the provider's default);
    each of ``secrets`` is redacted from every message.
    """

    provider = "api"
    key_variable = "API_KEY"
    #: Where the provider lives when no URL is given (recorded as the endpoint).
    default_url = ""

    def __init__(
        self,
        model: str,
        urls: Sequence[str | None],
        *,
        secrets: Sequence[str] = (),
        timeout_s: float = 120.0,
        max_retries: int = 6,
        max_in_flight: int | None = None,
        rate_limiter: RateLimiter | None = None,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
    ) -> None:
        if not model:
            raise ConfigError(f"a {self.provider}: judge needs a model name")
        if max_retries < 0 or timeout_s <= 0:
            raise ConfigError("max_retries must be >= 0 and timeout_s > 0")
        self.model = model
        self.urls: list[str | None] = list(urls) or [None]
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.rate_limiter = rate_limiter
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._secrets = [Secret(s) for s in secrets if s]
        self._in_flight = InFlightLimit(max_in_flight)
        self._turn = itertools.count()
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        """``<provider>:<model>`` (the URL and key are not part of it)."""
        return f"{self.provider}:{self.model}"

    @property
    def endpoint(self) -> str:
        """The server set, without credentials (replicas sorted, joined by commas)."""
        return ",".join(sorted({self.public_endpoint(u) for u in self.urls}))

    def public_endpoint(self, url: str | None) -> str:
        """``url`` as recorded; the provider's own URL when it is None."""
        return endpoint_url(url) if url else self.default_url

    def __repr__(self) -> str:
        urls = [public_url(u) if u else self.default_url for u in self.urls]
        return f"{type(self).__name__}(model={self.model!r}, urls={urls!r})"

    async def _attempt(self, request: ModelRequest, url: str | None) -> ModelResponse:
        """One call to the server at ``url``; raise the SDK's errors or UnreadableReply."""
        raise NotImplementedError

    def _classify(self, exc: BaseException) -> CallFailure | None:
        """The failure an SDK exception stands for, or None when it is not the SDK's."""
        raise NotImplementedError

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``, retrying transient failures; raise BackendError when they persist.

        The response's ``latency_s`` covers the whole call, retries and rate-limit waits included.
        """
        started = time.perf_counter()
        estimate = 0
        if self.rate_limiter is not None and self.rate_limiter.tokens_per_minute:
            estimate = estimate_tokens(
                [m.text_content() for m in request.messages],
                [(i.width, i.height) for m in request.messages for i in m.images()],
                request.settings.max_tokens,
            )
        attempts = 0
        while True:
            attempts += 1
            with self._lock:
                url = self.urls[next(self._turn) % len(self.urls)]
            failure: CallFailure | None = None
            try:
                async with self._in_flight.slot():
                    if self.rate_limiter is not None:
                        await self.rate_limiter.acquire(estimate)
                    # The SDKs never retry (their retries are off): one attempt is one HTTP
                    # request, counted for the sample's usage.
                    note_http_attempt()
                    response = await self._attempt(request, url)
            except Exception as exc:
                failure = self._classify(exc)
                if failure is None:
                    raise
            else:
                if self.rate_limiter is not None:
                    self.rate_limiter.settle(estimate, response.usage.total_tokens)
                latency = time.perf_counter() - started
                return dataclasses.replace(response, latency_s=latency)
            # Raised here, outside the except clause, so that the SDK's exception (whose
            # request still holds the credentials) is not chained as __context__.
            if not failure.retryable or attempts > self.max_retries:
                raise BackendError(self._failure_message(url, attempts, failure))
            delay = self._delay(attempts, failure.retry_after)
            logger.debug(
                "%s attempt %d failed (%s); retrying in %.2f s",
                self.identity,
                attempts,
                self.redact(failure.detail),
                delay,
            )
            await asyncio.sleep(delay)

    def _delay(self, attempts: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S) * random.uniform(1.0, 1.1)
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempts - 1))
        return ceiling * random.uniform(0.5, 1.0)

    def _failure_message(self, url: str | None, attempts: int, failure: CallFailure) -> str:
        where = public_url(url) if url else self.default_url
        hint = {
            401: f" (check {self.key_variable} or the api_key given)",
            403: " (the key is not allowed to use this model)",
            404: " (check the model name and the server URL)",
        }.get(failure.status, "")
        tries = "attempt" if attempts == 1 else "attempts"
        detail = self.redact(failure.detail)
        return f"{self.identity} at {where} failed after {attempts} {tries}: {detail}{hint}"

    def redact(self, text: str) -> str:
        """``text`` with every secret (the API key) replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret.value, "***")
        return text
