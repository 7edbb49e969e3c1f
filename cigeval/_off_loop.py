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

import _thread
import asyncio
import contextlib
import contextvars
import os
import weakref
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


#: Calls running at once per event loop: as many threads as the cores can keep busy. More
#: only queue for the GIL, and the event loop then waits in that queue behind every one of
#: them (64 threads decoding images held a server's loop for 0.3-1 s).
LIMIT = max(4, (os.cpu_count() or 1) + 2)
_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


async def off_loop(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` run in a daemon thread (with the caller's context variables), at
    most :data:`LIMIT` at once per event loop; cancelling the caller leaves the thread to
    finish alone (and frees its place)."""
    loop = asyncio.get_running_loop()
    slots = _slots.get(loop)
    if slots is None:
        slots = _slots[loop] = asyncio.Semaphore(LIMIT)
    async with slots:
        return await _in_thread(loop, function, *args)


async def _in_thread(loop: asyncio.AbstractEventLoop, function: Callable[..., T], *args: Any) -> T:
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

    # a thread of the low-level module: unlike threading.Thread.start, starting it does not
    # wait for it to run, which under load (many such threads decoding images) held the loop
    # for a second per batch; like a daemon thread, nothing waits for it at exit
    _thread.start_new_thread(target, ())
    return await future
