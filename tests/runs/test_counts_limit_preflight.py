"""Honest counts in the summary, ``--limit`` as the first N samples, and the Evaluator's own
preflight (issue 24)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cigeval import Evaluator, ScriptedBackend
from cigeval.config import RunConfig
from cigeval.errors import PreflightError
from cigeval.results import RunSummary, read_records
from cigeval.sample import sample_from_dict
from cigeval.score import Score
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli


def _score(sample_id: str, **usage: int) -> Score:
    return Score(id=sample_id, task="t", status="ok", value=0.5, usage=usage)


def test_the_summary_shows_http_attempts_next_to_calls_and_the_cut_off_replies() -> None:
    summary = RunSummary()
    summary.add(_score("a", calls=3, http_attempts=5, cut_off_replies=1))
    summary.add(_score("b", calls=2, http_attempts=2))
    text = summary.render(1.0)
    assert "model calls: 5 (0 from cache, 5 sent, 7 HTTP attempts with retries and failures)" in (
        text
    )
    assert "cut-off replies: 1" in text
    assert summary.as_dict(1.0)["http_attempts"] == 7
    assert summary.as_dict(1.0)["cut_off_replies"] == 1
    # records from backends that do not count attempts: unknown, never shown as 0
    older = RunSummary()
    older.add(_score("c", calls=3))
    assert "HTTP attempts" not in older.render(1.0) and "cut-off" not in older.render(1.0)
    assert older.as_dict(1.0)["http_attempts"] is None


def test_limit_means_the_first_n_samples_wherever_a_run_stopped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rows = seven_task_samples(tmp_path)
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "out.jsonl"
    ids = [r["id"] for r in rows]
    extra = ("--tools", "Difference", "--no-cache")
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *extra, "--limit", "2") == 0
        assert sorted(r["id"] for r in read_records(out)) == sorted(ids[:2])
        assert evaluate_cli(server, samples, out, *extra, "--limit", "4") == 0
        assert sorted(r["id"] for r in read_records(out)) == sorted(ids[:4])
        asked = len(server.requests)
        assert evaluate_cli(server, samples, out, *extra, "--limit", "3") == 0
        assert len(server.requests) == asked  # the first three are done: nothing to judge
    assert len(list(read_records(out))) == 4


class _CountingJudge(ScriptedBackend):
    """A scripted judge whose backend has a preflight, counted."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(rule_judge())
        self.preflights = 0
        self.fail = fail

    async def preflight(self) -> None:
        self.preflights += 1
        if self.fail:
            raise PreflightError("the judge is down; start it or pass --base-url")


def test_the_evaluator_runs_its_preflight_once_before_the_first_sample(tmp_path: Path) -> None:
    rows = seven_task_samples(tmp_path)
    items = [sample_from_dict(r, base_dir=tmp_path) for r in rows]
    run_config = RunConfig(use_cache=False)
    judge = _CountingJudge()
    evaluator = Evaluator(judge, tools=(), run_config=run_config)
    scores = evaluator.evaluate_many(items, concurrency=4)  # seven samples start together
    assert [s.status for s in scores] == ["ok"] * 7
    evaluator.evaluate(items[0])
    assert judge.preflights == 1
    for skip in (
        Evaluator(judge, tools=(), run_config=run_config, preflight=False),
        Evaluator(judge, tools=(), run_config=RunConfig(use_cache=False, preflight=False)),
    ):
        skip.evaluate(items[0])
    assert judge.preflights == 1
    down = _CountingJudge(fail=True)
    failing = Evaluator(down, tools=(), run_config=run_config)
    for _ in range(2):  # remembered: raised again without asking again
        with pytest.raises(PreflightError, match="the judge is down"):
            failing.evaluate(items[0])
    assert down.preflights == 1 and down.requests == []


def test_a_default_evaluator_offline_fails_at_once_naming_the_fixes(tmp_path: Path) -> None:
    sample = {**seven_task_samples(tmp_path)[0]}
    sample["images"] = {"output": str(tmp_path / "output.png")}
    judge = ScriptedBackend(rule_judge())
    started = time.perf_counter()
    with pytest.raises(PreflightError) as raised:
        Evaluator(judge, run_config=RunConfig(use_cache=False)).evaluate(sample)
    took = time.perf_counter() - started
    message = str(raised.value)
    # in Python's words: the checkpoint setting, or tools without Grounding
    assert 'grounding={"checkpoint": DIR}' in message
    assert 'tools=["Difference", "Scene Graph"]' in message
    assert "--tools" not in message and "--grounding-checkpoint" not in message
    assert judge.requests == []  # before the first model call, whatever the planner picks
    print(f"offline preflight failed in {took:.2f} s")
