"""A thread pool that knows how many jobs it holds, so the batch path can tell a finished
stage (every sample waits on a reply) from one whose tools are still running in threads."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class CountingExecutor(ThreadPoolExecutor):
    """asyncio's default executor, counting jobs submitted and not yet finished.

    ``on_idle`` is called (from the worker thread) each time a job finishes.
    """

    def __init__(self, on_done: Callable[[], None]) -> None:
        super().__init__(max_workers=min(32, (os.cpu_count() or 1) + 4))
        self._count_lock = threading.Lock()
        self._busy = 0
        self._on_done = on_done

    @property
    def busy(self) -> int:
        """Jobs submitted and not finished."""
        return self._busy

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Submit a job, counting it until it finishes."""
        with self._count_lock:
            self._busy += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._finished(None)
            raise
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _: object) -> None:
        with self._count_lock:
            self._busy -= 1
        self._on_done()
