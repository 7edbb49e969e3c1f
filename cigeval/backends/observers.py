"""The one hook that watches every model call: observers register once, the call sites notify.

Three things watch the calls of a run without being passed to any backend: the sample's count
of HTTP requests (:mod:`cigeval.backends.attempts`), the run's watch over its servers
(:mod:`cigeval.backends.reachability`, read by the circuit breaker) and the progress bar's call
counter (:mod:`cigeval.runs.progress`). Each is a :class:`CallObserver` registered with
:func:`observing` around the code whose calls it watches. The
:class:`~cigeval.session.JudgeSession` notifies :meth:`CallObserver.call_started` and
:meth:`CallObserver.call_ended` around each model call; a backend that talks HTTP notifies
:meth:`CallObserver.attempt_sent` as it sends each request and
:meth:`CallObserver.attempt_ended` with what became of it, and :meth:`CallObserver.note` with
what it ignored in a reply (usage figures that make no sense).

The observers travel in one context variable, so concurrent samples never mix their counts, a
backend needs no extra argument, and calls made outside an observed block are watched by
nobody. Backends without HTTP (``hf:``, in-process doubles) notify no attempt.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cigeval.messages import ModelResponse


class CallObserver:
    """Something that watches model calls; every method does nothing unless overridden."""

    def call_started(self) -> None:
        """A model call (one :meth:`Backend.complete`) starts."""

    def call_ended(self, response: ModelResponse | None) -> None:
        """A model call ended with ``response``, or failed (None)."""

    def attempt_sent(self, attempts: int = 1) -> None:
        """``attempts`` HTTP requests are being sent for the current call."""

    def attempt_ended(self, transport: str | None, detail: str = "") -> None:
        """One HTTP request's outcome: ``transport`` None when a server served it (whatever it
        answered, errors included), else why it was not served: ``connection``, ``timeout``,
        ``server_error`` or ``rate_limited`` (HTTP 429); ``detail`` says how, redacted."""

    def note(self, text: str) -> None:
        """Something the backend ignored in a reply, in words (e.g. impossible usage figures)."""


class Observers:
    """The observers registered where a call is made, notified together."""

    __slots__ = ("members",)

    def __init__(self, members: tuple[CallObserver, ...] = ()) -> None:
        self.members = members

    def call_started(self) -> None:
        """Tell every observer a call starts."""
        for observer in self.members:
            observer.call_started()

    def call_ended(self, response: ModelResponse | None) -> None:
        """Tell every observer a call ended (None: it failed)."""
        for observer in self.members:
            observer.call_ended(response)

    def attempt_sent(self, attempts: int = 1) -> None:
        """Tell every observer ``attempts`` HTTP requests are being sent."""
        for observer in self.members:
            observer.attempt_sent(attempts)

    def attempt_ended(self, transport: str | None, detail: str = "") -> None:
        """Tell every observer what became of one HTTP request."""
        for observer in self.members:
            observer.attempt_ended(transport, detail)

    def note(self, text: str) -> None:
        """Tell every observer something the backend ignored."""
        for observer in self.members:
            observer.note(text)


_NOBODY = Observers()
_OBSERVERS: ContextVar[Observers | None] = ContextVar("cigeval_call_observers", default=None)


@contextlib.contextmanager
def observing(*observers: CallObserver | None) -> Iterator[None]:
    """Register ``observers`` (None ones skipped) for the calls made in this block and the
    tasks and threads it starts with a copy of its context, besides those already registered."""
    added = tuple(o for o in observers if o is not None)
    token = _OBSERVERS.set(Observers(current_observers().members + added))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


def current_observers() -> Observers:
    """The observers of the calls made here (kept by code that notifies later, elsewhere)."""
    return _OBSERVERS.get() or _NOBODY


@contextlib.contextmanager
def observed_call() -> Iterator[list[ModelResponse]]:
    """Notify one model call's start and end: append the response to the yielded list; a
    call that raises, or appends nothing, ends without one."""
    observers = current_observers()
    received: list[ModelResponse] = []
    observers.call_started()
    try:
        yield received
    finally:
        observers.call_ended(received[0] if received else None)
