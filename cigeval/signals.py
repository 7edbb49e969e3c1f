"""How a run stops on a signal: Ctrl-C and SIGTERM end it the same way, keeping every record.

The local engine runs in an event loop, so SIGTERM cancels its main task (as Ctrl-C does);
the Ray engine reads records in a plain loop, so SIGTERM raises :class:`Terminated` there.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # every command imports this module; only a run needs asyncio
    import asyncio

#: Names of the ways a run can stop early, as :attr:`RunResult.stopped_by` holds them.
SIGINT, SIGTERM = "SIGINT", "SIGTERM"
#: The circuit breaker stopped the run (:mod:`cigeval.runs.breaker`).
CIRCUIT_BREAKER = "circuit breaker"


class Terminated(Exception):
    """SIGTERM arrived while the Ray engine's records were coming back."""


def cancel_on_sigterm(
    loop: asyncio.AbstractEventLoop, main: asyncio.Task[Any] | None, stop: Callable[[str], bool]
) -> bool:
    """Make SIGTERM cancel ``main`` (as Ctrl-C does) after ``stop("SIGTERM")`` says it is the
    first reason to stop; False where the platform cannot (Windows, not the main thread)."""
    if main is None:
        return False

    def handler() -> None:
        if stop(SIGTERM):
            main.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, handler)
    except (NotImplementedError, RuntimeError, ValueError):
        return False
    return True


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def raise_on_sigterm() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` inside the block (nothing changes outside the main
    thread, where Python cannot set signal handlers)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Stop:
    """Why a run stops early: the first reason given wins; None while it runs on."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def request(self, reason: str) -> bool:
        """Record ``reason`` unless another came first; True when this one is the reason."""
        if self.reason is not None:
            return False
        self.reason = reason
        return True
