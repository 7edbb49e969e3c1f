"""Blocking file work (hashing, reading, decoding) run beside the event loop, never holding up
a signal or the run's exit.

``asyncio.to_thread`` would keep the loop free too, but its threads belong to the loop's
default executor, which ``asyncio.run`` joins before it returns: a read that takes minutes
(a stalled network file system) would then hold up the exit of a run stopped by Ctrl-C or
SIGTERM just as long. :func:`off_loop` runs each call in a daemon thread of its own instead:
the awaiting task is cancelled at once, and a read still under way is left behind, its result
dropped, when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def off_loop(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` run in a daemon thread (with the caller's context variables);
    cancelling the caller leaves the thread to finish alone."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def target() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = context.run(function, *args)
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            error = exc
        # a closed loop: the run ended without this result
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, result, error)

    threading.Thread(target=target, name="cigeval-file-work", daemon=True).start()
    return await future
