"""Counting the HTTP requests a model call really made, retries and failures included.

A logical call (one :meth:`Backend.complete`) can cost several HTTP requests: retries after a
429, a 5xx, a timeout or a dropped connection, each sent whether it succeeds or not. The
:class:`~cigeval.session.JudgeSession` opens :func:`counting_http_attempts` around every call;
a backend that talks HTTP calls :func:`note_http_attempt` once per request it sends. The
count reaches the session even when the call fails for good, so a sample's
``usage["http_attempts"]`` holds what the server saw.

The counter travels in a context variable, so concurrent samples never mix their counts and a
backend needs no extra argument. Backends without HTTP (``hf:``, in-process doubles) note
nothing; a backend of your own may call :func:`note_http_attempt` to be counted too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar


class AttemptCounter:
    """HTTP requests sent within one :func:`counting_http_attempts` block."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def add(self, attempts: int = 1) -> None:
        """Count ``attempts`` more requests."""
        self.count += attempts

    def __repr__(self) -> str:
        return f"AttemptCounter({self.count})"


_COUNTER: ContextVar[AttemptCounter | None] = ContextVar("cigeval_http_attempts", default=None)


@contextlib.contextmanager
def counting_http_attempts() -> Iterator[AttemptCounter]:
    """Count the HTTP requests noted in this block (and the tasks it starts)."""
    counter = AttemptCounter()
    token = _COUNTER.set(counter)
    try:
        yield counter
    finally:
        _COUNTER.reset(token)


def current_attempt_counter() -> AttemptCounter | None:
    """The counter of the innermost :func:`counting_http_attempts` block, or None."""
    return _COUNTER.get()


def note_http_attempt(attempts: int = 1) -> None:
    """Count ``attempts`` HTTP requests sent for the current model call (no-op outside one)."""
    counter = _COUNTER.get()
    if counter is not None:
        counter.add(attempts)
