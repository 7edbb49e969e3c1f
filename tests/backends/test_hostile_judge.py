"""Issue 41, replayed: a judge that trickles its reply or streams one without end. Each
attempt has one deadline (connect, send, wait, read) and a cap on the bytes read: both end as
that attempt's failure, retried as the policy says, in bounded time and memory."""

from __future__ import annotations

import asyncio
import time
import tracemalloc

import pytest

from cigeval.backends.openai_backend import OpenAIBackend
from cigeval.errors import BackendError, PreflightError, TransportError
from cigeval.testing.openai_server import FakeOpenAIServer

from .support import fast_policy, image_request


def _ask(server: FakeOpenAIServer, **policy: object) -> str:
    backend = OpenAIBackend("m", [server.base_url], api_key="k", policy=fast_policy(**policy))

    async def call() -> str:
        try:
            return (await backend.complete(image_request())).text
        finally:
            await backend.aclose()

    return asyncio.run(call())


def test_a_trickling_reply_ends_at_the_attempts_deadline_and_is_retried() -> None:
    with FakeOpenAIServer(["judged"], hostile_for_s=30) as server:
        server.fail(0, "trickle")
        started = time.monotonic()
        assert _ask(server, timeout_s=1.5, max_retries=1) == "judged"
        assert 1.5 <= time.monotonic() - started < 5  # one deadline, then the retry
        server.fail(2, "trickle")
        server.fail(3, "trickle")
        started = time.monotonic()
        with pytest.raises(TransportError, match="failed after 2 attempts: timed out after 1 s"):
            _ask(server, timeout_s=1, max_retries=1)
        assert time.monotonic() - started < 5


def test_an_endless_reply_ends_at_the_byte_cap_in_bounded_memory() -> None:
    with FakeOpenAIServer(["judged"], hostile_for_s=3) as server:
        server.fail(0, "endless")
        tracemalloc.start()
        try:
            started = time.monotonic()
            assert _ask(server, max_retries=1) == "judged"  # the default cap: 8 MiB
            _, peak = tracemalloc.get_traced_memory()
            assert [r.fault for r in server.requests] == ["endless", None]
        finally:
            tracemalloc.stop()
        assert time.monotonic() - started < 10
        assert peak < 100 * 1024 * 1024, f"{peak / 1e6:.0f} MB held while reading"
        server.fail(2, "endless")
        with pytest.raises(BackendError, match="the reply passed 100000 bytes"):
            _ask(server, max_retries=0, max_reply_bytes=100_000)
        assert server.requests[2].fault == "endless"
        assert server.requests[0].header("Accept-Encoding") == "identity"


def _preflight(server: FakeOpenAIServer, **policy: object) -> None:
    backend = OpenAIBackend("m", [server.base_url], api_key="k", policy=fast_policy(**policy))

    async def check() -> None:
        try:
            await backend.preflight()
        finally:
            await backend.aclose()

    asyncio.run(check())


def test_the_preflight_check_has_one_deadline_and_a_capped_reply_too() -> None:
    """The model listing asked before the first sample: a trickle held a run for minutes at
    --timeout 8 (each byte came within the per-read timeout), an endless listing grew the
    process to 15 GB."""
    with FakeOpenAIServer(["judged"], hostile_for_s=30, models_fault="trickle") as server:
        started = time.monotonic()
        with pytest.raises(PreflightError, match=r"did not finish answering .* within 2 s"):
            _preflight(server, timeout_s=1)
        assert time.monotonic() - started < 5
    with FakeOpenAIServer(["judged"], hostile_for_s=5, models_fault="endless") as server:
        tracemalloc.start()
        try:
            with pytest.raises(PreflightError, match="the reply passed 100000 bytes"):
                _preflight(server, max_reply_bytes=100_000)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 50 * 1024 * 1024, f"{peak / 1e6:.0f} MB held while reading"
