"""The circuit breaker: a judge server that goes down stops the run within seconds, with at
most N error records, and a plain rerun against the live server finishes the file."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cigeval import Evaluator, ScriptedBackend
from cigeval.backends.observers import current_observers, observing
from cigeval.backends.openai_backend import OpenAIBackend
from cigeval.backends.policy import CallPolicy
from cigeval.backends.reachability import ServerWatch
from cigeval.cli import main
from cigeval.config import RunConfig
from cigeval.errors import TransportError
from cigeval.messages import GenerationSettings, Message, ModelRequest
from cigeval.results import read_records
from cigeval.runs import EXIT_CIRCUIT_BREAKER
from cigeval.runs.breaker import CircuitBreaker
from cigeval.score import Score
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import write_jsonl
from tests.test_sturdiness import distinct_samples

ROOT = Path(__file__).resolve().parents[2]


def _score(sample_id: str, kind: str | None, sent: int = 1) -> Score:
    """A Score ending ``ok`` or in an error of ``kind``, after ``sent`` calls to the server
    (and one from the cache)."""
    status = "error" if kind != "ok" else "ok"
    return Score(
        id=sample_id,
        task="t",
        status=status,
        value=0.5 if status == "ok" else None,
        error=None if status == "ok" else "down",
        error_kind=kind if kind not in ("ok", None) else None,
        usage={"calls": sent + 1, "cached_calls": 1},
    )


def test_the_breaker_holds_a_streak_releases_it_and_trips_on_the_nth() -> None:
    breaker = CircuitBreaker(3)
    refused = "transport.connection"
    assert breaker.offer(_score("a", refused)) == ([], False)
    assert breaker.offer(_score("b", refused)) == ([], False)
    released, stop = breaker.offer(_score("c", "ok"))  # the server answered again
    assert [s.id for s in released] == ["a", "b", "c"] and not stop
    breaker.offer(_score("d", refused))
    released, stop = breaker.offer(_score("e", "transport.timeout"))  # another reason
    assert [s.id for s in released] == ["d"] and not stop
    released, stop = breaker.offer(_score("f", None))  # an error of another kind
    assert [s.id for s in released] == ["e", "f"] and not stop
    breaker.offer(_score("g0", refused))
    # a sample answered from the cache alone, or a bad input, says nothing about the server
    assert [s.id for s in breaker.offer(_score("cached", "ok", sent=0))[0]] == ["cached"]
    assert [s.id for s in breaker.offer(_score("bad", None, sent=0))[0]] == ["bad"]
    assert [s.id for s in breaker.held] == ["g0"]
    breaker.release()
    for name in "ghi":
        released, stop = breaker.offer(_score(name, refused))
    assert released == [] and stop and breaker.tripped == refused and breaker.streak == 3
    assert breaker.release() == []  # the streak that tripped it gets no record
    off = CircuitBreaker(0)
    assert [s.id for s in off.offer(_score("x", refused))[0]] == ["x"]


def test_the_openai_backend_says_why_a_server_could_not_be_reached() -> None:
    def ask(backend: OpenAIBackend) -> TransportError:
        request = ModelRequest((Message.text("user", "hi"),), GenerationSettings(), "sha")
        with pytest.raises(TransportError) as raised:
            import asyncio

            asyncio.run(backend.complete(request))
        return raised.value

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    once = CallPolicy(max_retries=0)
    refused = OpenAIBackend("m", base_urls=[f"http://127.0.0.1:{port}/v1"], policy=once)
    assert ask(refused).reason == "connection"
    with FakeOpenAIServer(["ok"]) as server:
        server.fail(0, "500")
        failing = OpenAIBackend("m", base_urls=[server.base_url], policy=once, api_key="k")
        assert ask(failing).reason == "server_error"
    with FakeOpenAIServer(["ok"], latency_s=1.0) as server:
        quick = CallPolicy(max_retries=0, timeout_s=0.1)
        slow = OpenAIBackend("m", base_urls=[server.base_url], policy=quick, api_key="k")
        assert ask(slow).reason == "timeout"


def _refused(request: object) -> str:
    raise TransportError("connection failed: connection refused", "connection")


def test_from_python_a_dead_judge_stops_the_run_and_a_rerun_finishes(tmp_path: Path) -> None:
    rows = distinct_samples(tmp_path, 20)
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "out.jsonl"
    dead = ScriptedBackend(_refused)
    config = {"tools": (), "run_config": RunConfig(use_cache=False, concurrency=2)}
    result = Evaluator(dead, **config).run(samples, out=out, quiet=True, circuit_breaker=5)
    assert result.stopped_by == "circuit breaker" and result.exit_status == EXIT_CIRCUIT_BREAKER
    assert result.breaker is not None and result.breaker.tripped == "transport.connection"
    assert "stopped by the circuit breaker: 5 samples in a row" in result.render()
    assert "run it again to resume (circuit_breaker=0 turns" in result.render()  # a script's words
    assert len(dead.requests) < len(rows)  # it did not grind through every sample
    assert list(read_records(out)) == []  # never judged: no record
    again = Evaluator(ScriptedBackend(rule_judge()), **config).run(samples, out=out, quiet=True)
    assert again.exit_status == 0
    assert sorted(r["id"] for r in read_records(out)) == sorted(r["id"] for r in rows)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_process(port: int) -> subprocess.Popen[bytes]:
    """A judge server in a process of its own, so it can be killed like a real one."""
    code = (
        "import sys, time; from cigeval.testing.openai_server import FakeOpenAIServer; "
        "from cigeval.testing import rule_judge; "
        f"FakeOpenAIServer(rule_judge(), latency_s=0.03, port={port}).start(); "
        "print('up', flush=True); time.sleep(3600)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stdout.readline() == b"up\n"
    return process


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        # calls give up fast: ten failed samples in a row trip the sample rule
        (["--max-retries", "2", "--retry-backoff", "0.1"], "samples in a row"),
        # the default retries (a call gives up after ~30 s): the request rule trips first,
        # while every call is still retrying (its window shortened from 20 s for the test)
        (["--circuit-breaker-seconds", "3"], "no request reached the judge for"),
    ],
    ids=["sample-rule", "request-rule-default-retries"],
)
def test_a_server_killed_mid_run_stops_it_and_a_plain_rerun_finishes(
    tmp_path: Path, flags: list[str], said: str
) -> None:
    rows = distinct_samples(tmp_path, 60)
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "out.jsonl"
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    argv = [
        "evaluate", str(samples), "--model", "openai:judge-model", "--base-url", url,
        "--out", str(out), "--quiet", "--no-preflight", "--tools", "Difference",
        "--concurrency", "4", *flags,
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "sk-test",
        "CIGEVAL_CACHE_DIR": str(tmp_path / "cache"),
    }
    server = _server_process(port)
    try:
        run = subprocess.Popen(
            [sys.executable, "-m", "cigeval", *argv], env=env, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120
        while not (out.exists() and out.read_bytes().count(b"\n") >= 3):
            assert run.poll() is None and time.monotonic() < deadline, "no records came"
            time.sleep(0.01)
    finally:
        server.kill()
        server.wait()
    killed = time.monotonic()
    _, err = run.communicate(timeout=120)
    stopped_in = time.monotonic() - killed
    text = err.decode()
    assert run.returncode == EXIT_CIRCUIT_BREAKER, text
    assert stopped_in < 30, stopped_in
    assert "stopped by the circuit breaker" in text and said in text and "Traceback" not in text
    records = list(read_records(out))
    assert len([r for r in records if r["status"] == "error"]) <= 10
    assert 3 <= len(records) < len(rows)
    # the server is back (same address: part of the settings every record carries)
    server = _server_process(port)
    try:
        status = main([*argv])
    finally:
        server.kill()
        server.wait()
    final = list(read_records(out))
    assert sorted(r["id"] for r in final) == sorted(r["id"] for r in rows)
    assert status == 0, [r["error"] for r in final if r["status"] == "error"]


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_watch_says_down_only_after_the_window_with_enough_failures_and_no_success() -> None:
    clock = _Clock()
    watch = ServerWatch(window_s=20, min_failures=3, clock=clock)
    watch.attempt_ended("connection", "refused")
    clock.now += 25
    assert watch.down() is None  # one failure is not enough, however long ago
    watch.attempt_ended("connection", "refused")
    watch.attempt_ended("timeout", "timed out after 120 s")
    seen = watch.down()
    assert seen is not None and (seen.reason, seen.failures) == ("timeout", 3)
    assert seen.seconds == 25 and seen.detail == "timed out after 120 s"
    watch.attempt_ended(None)  # a request reached the server (any answer): the count starts over
    assert watch.down() is None
    for _ in range(3):
        watch.attempt_ended("server_error", "HTTP 503")
    clock.now += 19
    assert watch.down() is None  # not yet 20 s without a request getting through
    clock.now += 1
    assert watch.down() is not None


def test_attempts_reach_the_watch_of_the_run_only() -> None:
    watch = ServerWatch(window_s=0.0, min_failures=1)
    current_observers().attempt_ended("connection", "refused")  # outside the run: unheard
    assert watch.down() is None
    with observing(watch):
        current_observers().attempt_ended("connection", "refused")
    current_observers().attempt_ended(None)  # after the block: not this run's
    assert watch.down() is not None
