"""Blocking file work (hashing, reading, decoding) run beside the event loop, never holding up
a signal or the run's exit.

``asyncio.to_thread`` would keep the loop free too, but its threads belong to the loop's
default executor, which ``asyncio.run`` joins before it returns: a read that takes minutes
(a stalled network file system) would then hold up the exit of a run stopped by Ctrl-C or
SIGTERM just as long. :func:`off_loop` runs each call in a thread of its own pool instead,
which nothing joins at exit: the awaiting task is cancelled at once, and a read still under
way is left behind, its result dropped, when the run ends (a stalled read keeps its worker;
the next call gets another).
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import contextvars
import os
import queue
import threading
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
    """``function(*args)`` run in a worker thread (with the caller's context variables), at
    most :data:`LIMIT` at once per event loop; cancelling the caller leaves the worker to
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

    _pool.submit(target)
    return await future


class _Pool:
    """Worker threads of the low-level thread module, kept from call to call: a thread made
    per call cost some 5-10% more CPU per judged sample (a new stack and allocator arena each
    time), and starting one with threading.Thread waits until it runs, which under load held
    the event loop. Like daemon threads, nothing waits for them at exit. A new worker is made
    only when none is idle, so one stalled on a read never holds up the next call."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on an idle worker, or on a new one."""
        with self._lock:
            new = self._idle == 0
            if not new:
                self._idle -= 1  # that worker's turn is this job's
        self._jobs.put(job)
        if new:
            _thread.start_new_thread(self._work, ())

    def _work(self) -> None:
        while True:
            self._jobs.get()()  # each job settles its own future, errors included
            with self._lock:
                self._idle += 1


_pool = _Pool()
