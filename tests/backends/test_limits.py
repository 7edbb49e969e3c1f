"""RateLimiter and InFlightLimit, mostly on a fake clock so nothing depends on timing."""

from __future__ import annotations

import asyncio
import time

import pytest

from cigeval.backends import InFlightLimit, RateLimiter
from cigeval.backends.limits import estimate_tokens


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_requests_are_spaced_evenly_in_arrival_order() -> None:
    clock = FakeClock()
    limiter = RateLimiter(requests_per_minute=60, clock=clock)  # one per second
    assert [limiter.reserve() for _ in range(4)] == [0.0, 1.0, 2.0, 3.0]
    clock.now += 10  # idle time refills only up to the burst size
    assert [limiter.reserve() for _ in range(2)] == [0.0, 1.0]


def test_request_burst() -> None:
    limiter = RateLimiter(requests_per_minute=60, request_burst=3, clock=FakeClock())
    assert [limiter.reserve() for _ in range(5)] == [0.0, 0.0, 0.0, 1.0, 2.0]


def test_tokens_per_minute_and_settling() -> None:
    clock = FakeClock()
    limiter = RateLimiter(tokens_per_minute=600, clock=clock)  # 10 tokens per second
    assert limiter.reserve(600) == 0.0  # a whole minute's worth may go at once
    assert limiter.reserve(100) == pytest.approx(10.0)
    limiter.settle(estimated=600, actual=100)  # the first call used less: 500 come back
    assert limiter.reserve(100) == pytest.approx(0.0)
    limiter.settle(estimated=100, actual=300)  # and this one more: 100 are left
    assert limiter.reserve(110) == pytest.approx(1.0)


def test_a_request_larger_than_a_minute_does_not_deadlock() -> None:
    limiter = RateLimiter(tokens_per_minute=60, clock=FakeClock())
    assert limiter.reserve(10_000) == 0.0
    assert limiter.reserve(1) == pytest.approx(1.0)


def test_both_limits_wait_for_the_slower() -> None:
    limiter = RateLimiter(requests_per_minute=60, tokens_per_minute=60, clock=FakeClock())
    assert limiter.reserve(60) == 0.0
    assert limiter.reserve(30) == pytest.approx(30.0)


def test_invalid_limits() -> None:
    with pytest.raises(ValueError):
        RateLimiter(requests_per_minute=0)
    with pytest.raises(ValueError):
        InFlightLimit(0)


async def test_acquire_really_waits() -> None:
    limiter = RateLimiter(requests_per_minute=1200)  # 50 ms apart
    order: list[int] = []

    async def call(n: int) -> None:
        await limiter.acquire()
        order.append(n)

    started = time.monotonic()
    await asyncio.gather(*(call(n) for n in range(5)))
    assert order == [0, 1, 2, 3, 4]
    assert time.monotonic() - started >= 0.19


async def test_in_flight_limit() -> None:
    limit = InFlightLimit(3)
    active = peak = 0

    async def work() -> None:
        nonlocal active, peak
        async with limit.slot():
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1

    await asyncio.gather(*(work() for _ in range(10)))
    assert peak == 3


async def test_a_widened_limit_lets_waiting_calls_in_and_never_narrows() -> None:
    limit = InFlightLimit(2)
    active = peak = 0
    release = asyncio.Event()

    async def work() -> None:
        nonlocal active, peak
        async with limit.slot():
            active += 1
            peak = max(peak, active)
            await release.wait()
            active -= 1

    calls = [asyncio.create_task(work()) for _ in range(6)]
    await asyncio.sleep(0.05)
    assert peak == 2  # the others wait for a slot
    limit.widen(5)
    limit.widen(3)
    await asyncio.sleep(0.05)
    assert (peak, limit.limit) == (5, 5)
    release.set()
    await asyncio.gather(*calls)


def test_in_flight_limit_works_in_successive_event_loops() -> None:
    limit = InFlightLimit(1)

    async def twice() -> int:
        done = 0

        async def one() -> None:
            nonlocal done
            async with limit.slot():
                await asyncio.sleep(0)
                done += 1

        await asyncio.gather(one(), one())
        return done

    assert asyncio.run(twice()) == 2
    assert asyncio.run(twice()) == 2


def test_token_estimate() -> None:
    assert estimate_tokens(["x" * 400], [], 10) == 110
    # 1024x1024 is scaled to 768x768: four 512 tiles.
    assert estimate_tokens([], [(1024, 1024)], 0) == 85 + 170 * 4
