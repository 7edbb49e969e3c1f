"""``off_loop``: blocking work beside the event loop, at most LIMIT calls at once, a stalled
call never holding up the next ones, errors handed to the caller."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from cigeval._off_loop import LIMIT, off_loop


def test_at_most_limit_at_once_and_a_stalled_call_holds_up_nothing() -> None:
    running, most = [0], [0]
    lock = threading.Lock()
    release = threading.Event()

    def work(value: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return value * 2

    async def scenario() -> list[int]:
        stalled = asyncio.ensure_future(off_loop(release.wait))
        await asyncio.sleep(0.05)
        stalled.cancel()  # its worker stays on the read; its place is free
        started = time.perf_counter()
        beat = asyncio.ensure_future(asyncio.sleep(0.01))
        results = await asyncio.gather(*(off_loop(work, i) for i in range(3 * LIMIT)))
        assert beat.done() and time.perf_counter() - started < 5
        with pytest.raises(ZeroDivisionError):
            await off_loop(lambda: 1 / 0)
        return results

    try:
        assert asyncio.run(scenario()) == [2 * i for i in range(3 * LIMIT)]
    finally:
        release.set()
    assert most[0] <= LIMIT
