"""``evaluate_many(items, concurrency=N)``, the function and the method, keeps as many model
calls in flight as N samples need, not the limit the default settings would give (3 x 8 = 24)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import cigeval
from cigeval import ConfigError, Evaluator, RunConfig, ScriptedBackend
from cigeval.backends._retrying import CallFailure, RetryingBackend
from cigeval.backends.policy import CallPolicy
from cigeval.backends.registry import BACKENDS, register_backend
from cigeval.messages import Message, ModelResponse
from cigeval.rubrics.registry import RUBRICS, register_rubric
from cigeval.sample_run import SampleRun
from cigeval.score import Verdict
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


class SlowJudge(RetryingBackend):
    """An API judge built from the run's settings (its limit of calls in flight included)
    whose calls wait until ``wanted`` are in flight at once, counting the most that were;
    after ``timeout_s`` without that many it stops waiting for good (a run that never gets
    there still ends)."""

    provider = "slow"

    def __init__(self, model: str, policy: CallPolicy, wanted: int, timeout_s: float) -> None:
        super().__init__(model, [None], policy=policy)
        self.wanted = wanted
        self.timeout_s = timeout_s
        self.in_flight = 0
        self.most = 0
        self.opened = False

    async def _attempt(self, prepared: Any, index: int) -> ModelResponse:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        deadline = time.monotonic() + self.timeout_s
        while not self.opened and self.most < self.wanted and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.opened = True
        self.in_flight -= 1
        return ModelResponse(text="fine", model=self.model, finish_reason="stop")

    def _classify(self, exc: BaseException) -> CallFailure | None:
        return None


@dataclass
class ThreeQuestionsAtOnce:
    """A rubric asking the judge three questions of each sample at once, as the built-in
    tasks do at most (:data:`cigeval.config.CALLS_PER_SAMPLE`)."""

    name: str = "three_at_once"
    description: str = "three questions per sample, asked together"

    def validate(self, sample: object) -> None:
        return None

    async def evaluate(self, run: SampleRun) -> Verdict:
        questions = [Message.text("user", f"{run.sample.id}: question {n}") for n in range(3)]
        await asyncio.gather(*(run.judge.call("judge", [q]) for q in questions))
        return Verdict(value=1.0)


@pytest.fixture
def slow_judges() -> Iterator[list[SlowJudge]]:
    """``slow:NAME`` builds a :class:`SlowJudge` waiting for 192 calls (20 s at most); the
    list holds every one built."""
    built: list[SlowJudge] = []

    def factory(model: str, *, base_url: Any = None, run_config: Any = None) -> SlowJudge:
        built.append(SlowJudge(model, CallPolicy.from_run_config(run_config), 192, 20.0))
        return built[-1]

    with BACKENDS.scoped(), RUBRICS.scoped():
        register_backend("slow", factory)
        register_rubric(ThreeQuestionsAtOnce())
        yield built


SLOW_SETTINGS: dict[str, Any] = {
    "rubric": "three_at_once",
    "run_config": RunConfig(use_cache=False, preflight=False),
}


def test_the_method_keeps_three_calls_per_sample_of_its_concurrency_in_flight(
    tmp_path: Path, slow_judges: list[SlowJudge]
) -> None:
    judge = Evaluator("slow:judge", **SLOW_SETTINGS)
    assert slow_judges[0].call_limit.limit == DEFAULT_CALLS_IN_FLIGHT
    scores = judge.evaluate_many(samples(tmp_path, 64), concurrency=64)
    assert [s.status for s in scores] == ["ok"] * 64
    assert slow_judges[0].most == 192  # not 24: the limit the judge was built with


def test_the_function_keeps_three_calls_per_sample_of_its_concurrency_in_flight(
    tmp_path: Path, slow_judges: list[SlowJudge]
) -> None:
    scores = cigeval.evaluate_many(
        samples(tmp_path, 64), "slow:judge", concurrency=64, **SLOW_SETTINGS
    )
    assert [s.status for s in scores] == ["ok"] * 64
    assert [judge.most for judge in slow_judges] == [192]
