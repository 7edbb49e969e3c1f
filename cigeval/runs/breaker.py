"""The circuit breaker: a run stops when its judge server is down, instead of failing every
remaining sample.

N samples in a row (``--circuit-breaker N``, default 10, 0 = off) that end in error because
a model call could not reach the server for the same reason (``Score.error_kind``:
connection refused or reset, timeout, HTTP 5xx) stop the run. While such a streak is
shorter than N its records are held back; a sample the server answered (ok, or an error of
another kind after a reply) releases them, and they are written as the errors they are. A
sample that asked the server nothing (every answer from the cache, or a bad input) says
nothing about it: it is written at once and leaves the streak as it is. When the streak
reaches N the run stops and the held samples get no record: they were never judged, so a
plain rerun judges them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cigeval.score import Score

#: The ``error_kind`` prefix of a failure to reach the server.
TRANSPORT = "transport."


class CircuitBreaker:
    """Holds back a streak of transport failures and says when it is long enough to stop."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.held: list[Score] = []
        #: The ``error_kind`` that stopped the run, its last message and how many samples
        #: failed in that last streak (they were not recorded); None while closed.
        self.tripped: str | None = None
        self.message: str | None = None
        self.streak = 0

    def offer(self, score: Score) -> tuple[list[Score], bool]:
        """The Scores to write now (``score`` and any held before it, or none), and whether
        the run must stop."""
        kind = score.error_kind if score.status == "error" else None
        transport = kind is not None and kind.startswith(TRANSPORT)
        if self.threshold > 0 and not transport and _asked_nothing(score):
            return [score], False
        if self.threshold <= 0 or not transport:
            released, self.held = [*self.held, score], []
            return released, False
        released = []
        if self.held and self.held[0].error_kind != kind:
            released, self.held = self.held, []
        self.held.append(score)
        if len(self.held) < self.threshold:
            return released, False
        self.tripped, self.message, self.streak = kind, score.error, len(self.held)
        self.held = []
        return released, True

    def release(self) -> list[Score]:
        """The Scores still held (the run ended another way: they are written)."""
        released, self.held = self.held, []
        return released


def _asked_nothing(score: Score) -> bool:
    """True when the sample sent no request to the server (answers from the cache only, or
    no call at all)."""
    usage = score.usage
    return usage.get("calls", 0) - usage.get("cached_calls", 0) <= 0
