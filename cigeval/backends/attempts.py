"""Counting the HTTP requests a model call really made, retries and failures included.

A logical call (one :meth:`Backend.complete`) can cost several HTTP requests: retries after a
429, a 5xx, a timeout or a dropped connection, each sent whether it succeeds or not. The
:class:`~cigeval.session.JudgeSession` registers an :class:`AttemptCounter` around every call
(:func:`counting_http_attempts`); a backend that talks HTTP notifies the call's observers
(:mod:`cigeval.backends.observers`) once per request it sends. The count reaches the session
even when the call fails for good, so a sample's ``usage["http_attempts"]`` holds what the
server saw. The counter also keeps the notes a backend made about the call's replies.

A backend of your own may call :func:`note_http_attempt` to be counted too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from cigeval.backends.observers import CallObserver, current_observers, observing


class AttemptCounter(CallObserver):
    """HTTP requests sent within one :func:`counting_http_attempts` block, and the notes the
    backend made about them."""

    def __init__(self) -> None:
        self.count = 0
        self.notes: list[str] = []

    def attempt_sent(self, attempts: int = 1) -> None:
        """Count ``attempts`` more requests."""
        self.count += attempts

    def note(self, text: str) -> None:
        """Keep a note the backend made."""
        self.notes.append(text)

    def __repr__(self) -> str:
        return f"AttemptCounter({self.count})"


@contextlib.contextmanager
def counting_http_attempts() -> Iterator[AttemptCounter]:
    """Count the HTTP requests sent in this block (and the tasks it starts)."""
    counter = AttemptCounter()
    with observing(counter):
        yield counter


def note_http_attempt(attempts: int = 1) -> None:
    """Count ``attempts`` HTTP requests sent for the current model call (no-op outside one)."""
    current_observers().attempt_sent(attempts)
