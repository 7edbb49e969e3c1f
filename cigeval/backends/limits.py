"""Client-side limits on model calls: requests and tokens per minute, calls in flight.

Both helpers work across event loops (a backend built once may serve several ``asyncio.run``
calls, as in Jupyter or a sync ``evaluate()``) and across threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


class _Bucket:
    """A token bucket that hands out reservations: the level may go negative (debt).

    A caller takes its tokens at once and sleeps until the debt it joined is repaid, so
    callers are served in arrival order without holding a lock while they wait.
    """

    def __init__(self, per_minute: float, capacity: float, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = capacity
        self.level = capacity
        self.updated = now

    def reserve(self, amount: float, now: float) -> float:
        """Take ``amount`` and return the seconds to wait before using it."""
        self._refill(now)
        self.level -= min(amount, self.capacity)
        return 0.0 if self.level >= 0 else -self.level / self.rate

    def adjust(self, amount: float, now: float) -> None:
        """Take (positive) or give back (negative) tokens after the fact."""
        self._refill(now)
        self.level = min(self.capacity, self.level - amount)

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now


class RateLimiter:
    """Async-safe limiter of requests per minute and tokens per minute (token buckets).

    ``requests_per_minute`` spaces requests evenly (at most ``request_burst`` at once, 1 by
    default). ``tokens_per_minute`` lets up to one minute's worth of tokens go at once and then
    refills continuously. Token use is estimated before a call (:meth:`acquire`) and corrected
    with the reported usage afterwards (:meth:`settle`). Either limit may be ``None`` (off).

    A waiter cancelled while sleeping keeps its reservation; the limiter errs on the slow side.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        request_burst: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (
            ("requests_per_minute", requests_per_minute),
            ("tokens_per_minute", tokens_per_minute),
        ):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        self._requests = (
            _Bucket(requests_per_minute, max(1.0, request_burst), now)
            if requests_per_minute
            else None
        )
        self._tokens = (
            _Bucket(tokens_per_minute, tokens_per_minute, now) if tokens_per_minute else None
        )

    def reserve(self, tokens: float = 0.0) -> float:
        """Reserve one request and ``tokens`` tokens; return the seconds to wait first."""
        with self._lock:
            now = self._clock()
            wait = 0.0
            if self._requests is not None:
                wait = self._requests.reserve(1.0, now)
            if self._tokens is not None and tokens > 0:
                wait = max(wait, self._tokens.reserve(tokens, now))
            return wait

    async def acquire(self, tokens: float = 0.0) -> None:
        """Wait until one request using about ``tokens`` tokens may start."""
        wait = self.reserve(tokens)
        if wait > 0:
            await asyncio.sleep(wait)

    def settle(self, estimated: float, actual: float) -> None:
        """Correct an earlier estimate once the real token count of the call is known."""
        if self._tokens is None or actual <= 0:
            return
        with self._lock:
            self._tokens.adjust(actual - estimated, self._clock())

    def __repr__(self) -> str:
        return (
            f"RateLimiter(requests_per_minute={self.requests_per_minute}, "
            f"tokens_per_minute={self.tokens_per_minute})"
        )


class InFlightLimit:
    """At most ``limit`` calls in flight at once (``None``: no limit), per event loop.

    Use as ``async with limit.slot(): ...``. asyncio semaphores belong to one event loop, so
    one is kept per running loop.
    """

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"in-flight limit must be at least 1, got {limit}")
        self.limit = limit
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _semaphore(self) -> asyncio.Semaphore | None:
        if self.limit is None:
            return None
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = self._semaphores[loop] = asyncio.Semaphore(self.limit)
            return semaphore

    def widen(self, limit: int) -> None:
        """Let up to ``limit`` calls be in flight from now on, where fewer were allowed (a
        limit never narrows; no limit stays none), in every event loop already using it."""
        with self._lock:
            if self.limit is None or limit <= self.limit:
                return
            extra, self.limit = limit - self.limit, limit
            semaphores = list(self._semaphores.items())
        for loop, semaphore in semaphores:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                for _ in range(extra):
                    loop.call_soon_threadsafe(semaphore.release)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the slots for the duration of the ``async with`` block."""
        semaphore = self._semaphore()
        if semaphore is None:
            yield
            return
        async with semaphore:
            yield

    def __repr__(self) -> str:
        return f"InFlightLimit({self.limit})"


def estimate_tokens(
    texts: list[str], image_sizes: list[tuple[int, int]], max_tokens: int | None
) -> int:
    """A rough token count of a request before it is sent, for the tokens-per-minute limit.

    Text counts as one token per four characters; an image as OpenAI's high-detail tiling
    (85 plus 170 per 512-pixel tile after scaling to fit 2048 and a 768 short side). Providers
    count output tokens against the limit up to ``max_tokens``, so that is added too (1024
    when the request sends none).
    """
    total = sum(len(t) for t in texts) // 4
    for width, height in image_sizes:
        scale = min(1.0, 2048 / max(width, height, 1))
        w, h = width * scale, height * scale
        scale = min(1.0, 768 / max(min(w, h), 1))
        w, h = w * scale, h * scale
        total += 85 + 170 * (-(-int(w) // 512)) * (-(-int(h) // 512))
    return total + (1024 if max_tokens is None else max_tokens)
