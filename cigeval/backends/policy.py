"""The call policy of the HTTP backends as one frozen value: how long an attempt may take, how
often and how long to retry, how many calls may be in flight and how fast they may start."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from cigeval.backends.limits import InFlightLimit, RateLimiter
from cigeval.config import MAX_REPLY_BYTES, RunConfig, calls_in_flight
from cigeval.errors import ConfigError


@dataclass(frozen=True)
class CallPolicy:
    """How an API backend makes its calls; the knobs carry the names of
    :class:`~cigeval.config.RunConfig`'s fields (:meth:`from_run_config`).

    ``timeout_s`` bounds one attempt, all of it (connect, send, wait, read); ``max_retries``
    counts the attempts after the first; ``retry_backoff_s`` is the wait before the first retry,
    doubled each retry (jittered, capped at ``backoff_max_s``); a server's Retry-After replaces
    it, honoured up to ``max_retry_after_s``; ``retry_wait_budget_s`` bounds the waits of one
    call together (a call whose next wait would pass it fails at once). ``max_in_flight`` caps
    concurrent calls (None: no cap); ``rate_limiter`` spaces them. ``max_reply_bytes`` caps
    what is read of one reply (:mod:`cigeval.backends._reply_cap`).
    """

    timeout_s: float = 120.0
    max_retries: int = 6
    retry_backoff_s: float = 0.5
    backoff_max_s: float = 30.0
    max_retry_after_s: float = 60.0
    retry_wait_budget_s: float = 120.0
    max_in_flight: int | None = None
    max_reply_bytes: int = MAX_REPLY_BYTES
    rate_limiter: RateLimiter | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.timeout_s <= 0:
            raise ConfigError("max_retries must be >= 0 and timeout_s > 0")
        if min(self.retry_backoff_s, self.backoff_max_s) <= 0:
            raise ConfigError("retry_backoff_s and backoff_max_s must be > 0")
        if self.max_retry_after_s < 0 or self.retry_wait_budget_s < 0:
            raise ConfigError("max_retry_after_s and retry_wait_budget_s must be >= 0")
        if self.max_reply_bytes < 1:
            raise ConfigError("max_reply_bytes must be >= 1")
        if self.max_in_flight is not None and self.max_in_flight < 1:
            raise ConfigError("max_in_flight must be >= 1 (or None: no cap)")

    @classmethod
    def from_run_config(cls, config: RunConfig | None) -> CallPolicy:
        """The policy a run's settings describe (the defaults when ``config`` is None)."""
        config = config or RunConfig()
        limiter = None
        if config.requests_per_minute or config.tokens_per_minute:
            limiter = RateLimiter(config.requests_per_minute, config.tokens_per_minute)
        return cls(
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            retry_backoff_s=config.retry_backoff_s,
            max_retry_after_s=config.max_retry_after_s,
            retry_wait_budget_s=config.retry_wait_budget_s,
            max_in_flight=calls_in_flight(config),
            max_reply_bytes=config.max_reply_bytes,
            rate_limiter=limiter,
        )

    def delay(self, attempts: int, retry_after: float | None) -> float:
        """Seconds to wait after ``attempts`` failed attempts: the server's ``retry_after``
        (jittered up by at most a tenth, never past ``max_retry_after_s``), else exponential
        backoff with jitter."""
        if retry_after is not None:
            return min(retry_after * random.uniform(1.0, 1.1), self.max_retry_after_s)
        ceiling = min(self.backoff_max_s, self.retry_backoff_s * 2 ** (attempts - 1))
        return ceiling * random.uniform(0.5, 1.0)

    @property
    def longest_call_s(self) -> float:
        """The longest one call can take once it holds a slot, by the policy's arithmetic:
        every attempt timing out, plus every wait the budget allows (the waits for a slot
        in flight or for the rate limiter come on top)."""
        return (self.max_retries + 1) * self.timeout_s + self.retry_wait_budget_s


def widen_calls_in_flight(backends: Iterable[object], config: RunConfig, samples: int) -> None:
    """Let ``backends``, and those they wrap (``inner``), keep in flight the model calls of
    ``samples`` samples judged at once (:func:`~cigeval.config.calls_in_flight`) where their
    :class:`~cigeval.backends.limits.InFlightLimit` (``call_limit``) allows fewer."""
    calls = calls_in_flight(config, samples)
    for backend in backends:
        while backend is not None:
            call_limit = getattr(backend, "call_limit", None)
            if isinstance(call_limit, InFlightLimit):
                call_limit.widen(calls)
            backend = getattr(backend, "inner", None)
