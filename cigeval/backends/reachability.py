"""Whether a run's judge servers can be reached at all, watched over every HTTP attempt.

The circuit breaker of a run (:mod:`cigeval.runs.breaker`) counts samples that failed for
good, but a sample fails for good only once its call has waited out every retry (about 30 s
with the default six). When a server dies, the run should not wait that long to notice: it
is down as soon as no request has reached it for a while although many were sent. A backend
that talks HTTP reports the outcome of each attempt with :func:`note_attempt` (``None`` when
the request reached a server, whatever it answered; else the transport reason: connection,
timeout, server_error); a run opens :func:`watching_servers` around its samples and asks its
:class:`ServerWatch` whether the servers are down.

The watch travels in a context variable, like the attempt counter
(:mod:`cigeval.backends.attempts`), so a backend needs no extra argument and calls made
outside a run are watched by nobody.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class ServersDown:
    """What a :class:`ServerWatch` saw: no request reached a server for ``seconds`` while
    ``failures`` attempts failed, the last one for ``reason`` (``detail`` says how)."""

    reason: str
    detail: str
    failures: int
    seconds: float


class ServerWatch:
    """Attempt outcomes of one run: the servers are down when, for ``window_s`` seconds, no
    attempt reached a server and at least ``min_failures`` attempts failed to."""

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

    def attempt(self, transport: str | None, detail: str = "") -> None:
        """One attempt's outcome: None when it reached a server, else why it did not."""
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


_WATCH: ContextVar[ServerWatch | None] = ContextVar("cigeval_server_watch", default=None)


@contextlib.contextmanager
def watching_servers(watch: ServerWatch | None) -> Iterator[ServerWatch | None]:
    """Report the attempts made in this block (and the tasks it starts) to ``watch``."""
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)


def note_attempt(transport: str | None, detail: str = "") -> None:
    """Report one HTTP attempt's outcome to the run's watch (no-op outside a watched run):
    ``transport`` None when the request reached a server (any answer, errors included),
    else ``connection``, ``timeout`` or ``server_error``."""
    watch = _WATCH.get()
    if watch is not None:
        watch.attempt(transport, detail)
