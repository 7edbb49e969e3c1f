"""Whether a run's judge servers can be reached at all, watched over every HTTP attempt.

The circuit breaker of a run (:mod:`cigeval.runs.breaker`) counts samples that failed for
good, but a sample fails for good only once its call has waited out every retry (about 30 s
with the default six). When a server dies, the run should not wait that long to notice: it
is down as soon as no request has reached it for a while although many were sent. A backend
that talks HTTP reports the outcome of each attempt to the call observers
(:meth:`~cigeval.backends.observers.CallObserver.attempt_ended`: ``None`` when a server served
the request, whatever it answered; else why not: connection, timeout, server_error, or
rate_limited for an HTTP 429, since a server that refuses every request is not serving
either); a run registers its :class:`ServerWatch` with
:func:`~cigeval.backends.observers.observing` around its samples and asks it whether the
servers are down.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cigeval.backends.observers import CallObserver


@dataclass(frozen=True)
class ServersDown:
    """What a :class:`ServerWatch` saw: no request was served for ``seconds`` while
    ``failures`` attempts failed, the last one for ``reason`` (``detail`` says how)."""

    reason: str
    detail: str
    failures: int
    seconds: float


class ServerWatch(CallObserver):
    """Attempt outcomes of one run: the servers are down when, for ``window_s`` seconds, no
    attempt was served and at least ``min_failures`` attempts failed to."""

    def __init__(
        self,
        window_s: float,
        min_failures: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window_s = window_s
        self.min_failures = max(1, min_failures)
        self._clock = clock
        self._since: float | None = None  # the first failure since a request got through
        self._failures = 0
        self._reason = ""
        self._detail = ""

    def attempt_ended(self, transport: str | None, detail: str = "") -> None:
        """One attempt's outcome: None when a server served it, else why none did."""
        if transport is None:
            self._since, self._failures = None, 0
            return
        if self._since is None:
            self._since = self._clock()
        self._failures += 1
        self._reason, self._detail = transport, detail

    def down(self) -> ServersDown | None:
        """What the watch saw when the servers look down, else None."""
        if self._since is None or self._failures < self.min_failures:
            return None
        elapsed = self._clock() - self._since
        if elapsed < self.window_s:
            return None
        return ServersDown(self._reason, self._detail, self._failures, elapsed)
