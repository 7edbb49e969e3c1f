"""``evaluate_many(items, concurrency=N)`` keeps as many model calls in flight as N samples
need, not the limit the default settings would give (3 x 8 = 24)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import cigeval
from cigeval import ConfigError, RunConfig, ScriptedBackend
from cigeval.testing import request_text
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import make_image

#: The limit of calls in flight the default settings give (3 per sample, 8 samples).
DEFAULT_CALLS_IN_FLIGHT = 24


def viescore_reply(body: dict[str, Any]) -> str:
    """VIEScore's two calls: one score per SC aspect, then the PQ pair."""
    text = request_text(body)
    if "ASPECT 1 (" in text:
        aspects = text.count("ASPECT ")
        return json.dumps({"score": [8] * aspects, "reasoning": "the square is red"})
    return json.dumps({"score": [7, 9], "reasoning": "clean and natural"})


def samples(folder: Path, count: int) -> list[dict[str, Any]]:
    image = str(folder / make_image(folder / "output.png", "white", (10, 10, 30, 30), "red"))
    return [
        {"id": f"s{n}", "task": "text_guided_ig", "prompt": f"a red square {n}",
         "images": {"output": image}}
        for n in range(count)
    ]  # fmt: skip


class Gate:
    """A reply function holding every reply until ``wanted`` requests wait at once; it then
    opens for good (after ``timeout_s`` too, so a run that never gets there still ends)."""

    def __init__(self, wanted: int, timeout_s: float) -> None:
        self.wanted = wanted
        self.timeout_s = timeout_s
        self.waiting = 0
        #: The most requests that waited at once.
        self.most = 0
        self.opened = False
        self._condition = threading.Condition()

    def __call__(self, body: dict[str, Any]) -> str:
        with self._condition:
            self.waiting += 1
            self.most = max(self.most, self.waiting)
            if self.waiting >= self.wanted:
                self.opened = True
            self._condition.notify_all()
            self._condition.wait_for(lambda: self.opened, timeout=self.timeout_s)
            self.opened = True
            self._condition.notify_all()
            self.waiting -= 1
        return viescore_reply(body)


def test_every_sample_admitted_has_its_call_in_flight(tmp_path: Path) -> None:
    # However slow the machine, the 120 first calls all reach the server before any answer;
    # with the limit the default settings give, 24 did, and the gate timed out.
    gate = Gate(120, timeout_s=60.0)
    with FakeOpenAIServer(gate) as server:
        scores = cigeval.evaluate_many(
            samples(tmp_path, 120),
            f"openai:fake-model@{server.base_url}",
            concurrency=120,
            rubric="viescore",
            run_config=RunConfig(use_cache=False),
        )
    assert [s.status for s in scores] == ["ok"] * 120
    assert gate.most == 120


def test_two_hundred_samples_of_two_one_second_calls_take_seconds_not_twenty(
    tmp_path: Path,
) -> None:
    items = samples(tmp_path, 200)
    settings = {"rubric": "viescore", "run_config": RunConfig(use_cache=False)}
    with FakeOpenAIServer(viescore_reply, latency_s=1.0) as server:
        model = f"openai:fake-model@{server.base_url}"
        # the first Evaluator pays for the imports and the client's start, untimed
        assert cigeval.evaluate_many(items[:2], model, concurrency=2, **settings)
        server.max_concurrent = 0
        started = time.perf_counter()
        scores = cigeval.evaluate_many(items, model, concurrency=256, **settings)
        elapsed = time.perf_counter() - started
        calls = len(server.requests) - 4
    assert [s.status for s in scores] == ["ok"] * 200
    assert [s.id for s in scores] == [item["id"] for item in items]
    assert calls == 400  # two dependent calls per sample: SC, then PQ
    # The old limit (24 calls in flight) could not finish 400 one-second calls in under
    # 400 / 24 = 16.7 s on any machine. Now nearly every sample's call is in flight at once,
    # and the run takes its critical path (two 1 s calls) plus the CPU of 400 calls: about
    # 3 s on a quiet machine, more on a loaded one; the bounds hold on either.
    assert server.max_concurrent > DEFAULT_CALLS_IN_FLIGHT
    assert elapsed < 15.0, f"{elapsed:.1f} s"


def test_a_concurrency_below_one_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid concurrency 0"):
        cigeval.evaluate_many(samples(tmp_path, 1), ScriptedBackend(["{}"]), concurrency=0)


def test_an_explicit_limit_of_calls_in_flight_is_kept(tmp_path: Path) -> None:
    items = samples(tmp_path, 12)
    with FakeOpenAIServer(viescore_reply, latency_s=0.2) as server:
        scores = cigeval.evaluate_many(
            items,
            f"openai:fake-model@{server.base_url}",
            concurrency=12,
            rubric="viescore",
            run_config=RunConfig(use_cache=False, max_calls_in_flight=3),
        )
    assert [s.status for s in scores] == ["ok"] * 12
    assert 1 < server.max_concurrent <= 3
