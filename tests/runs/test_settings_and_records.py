"""One run, one set of settings; one record per id; scores within their rubric's range.

Through ``cigeval evaluate`` against a real HTTP server on 127.0.0.1, and from Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, ScriptedBackend
from cigeval.config import RunConfig
from cigeval.report import build_report
from cigeval.results import read_records
from cigeval.results.fingerprint import MixedSettings
from cigeval.results.run import score_of
from cigeval.rubrics import register_rubric
from cigeval.rubrics.registry import RUBRICS
from cigeval.score import Verdict
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

TOOLS = ("--tools", "Difference")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


def test_a_resume_with_other_settings_exits_2_naming_them(env: Path, capsys) -> None:
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env))
    out = env / "out.jsonl"
    with FakeOpenAIServer(rule_judge(scores={"edit_success": 2})) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, "--limit", "3") == 0
        before = out.read_bytes()
        calls = len(server.requests)
        capsys.readouterr()
        other = ("--aggregate", "max", "--temperature", "0.9")
        assert evaluate_cli(server, samples, out, *TOOLS, *other) == 2
        err = capsys.readouterr().err
        assert "3 record(s) made with other settings" in err
        assert "config.aggregate" in err and "config.temperature" in err
        assert "--allow-mixed-settings" in err and err.count("\n") == 1  # one line
        assert out.read_bytes() == before and len(server.requests) == calls  # nothing judged
        # the same with --retry-errors: the file is not touched either
        assert evaluate_cli(server, samples, out, *TOOLS, *other, "--retry-errors") == 2
        assert out.read_bytes() == before
        # allowed on purpose: appended, and the report keeps the two sets apart
        assert evaluate_cli(server, samples, out, *TOOLS, *other, "--allow-mixed-settings") == 0
    records = list(read_records(out))
    assert len(records) == 7 and len({r["fingerprint"] for r in records}) == 2
    report = build_report([out], n_boot=20)
    assert len(report.runs) == 2
    assert sorted(len(run.records) for run in report.runs) == [3, 4]
    for run, board in zip(report.runs, report.leaderboards, strict=True):
        scored = sum(board.overall[g].n + board.overall[g].errors for g in board.overall)
        assert scored == len(run.records)  # no number pools the two sets
    mixed = [p for p in report.problems if "different settings" in p]
    assert len(mixed) == 1 and "config.aggregate" in mixed[0]


def test_from_python_a_mixed_resume_raises_unless_allowed(tmp_path: Path) -> None:
    rows = seven_task_samples(tmp_path)[:2]
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "out.jsonl"
    run_config = RunConfig(use_cache=False, preflight=False)
    first = Evaluator(ScriptedBackend(rule_judge()), tools=(), run_config=run_config)
    first.run(samples, out=out, limit=1, quiet=True)
    other = Evaluator(
        ScriptedBackend(rule_judge()), tools=(), aggregate="mean", run_config=run_config
    )
    with pytest.raises(MixedSettings) as raised:
        other.run(samples, out=out, quiet=True)
    assert raised.value.differing == ["config.aggregate"] and raised.value.records == 1
    result = other.run(samples, out=out, quiet=True, allow_mixed_settings=True)
    assert result.summary.statuses["ok"] == 1


def _record(sample_id: str, score: Any, model: str = "G", rubric: str = "cigeval") -> dict:
    return {
        "id": sample_id,
        "task": "text_guided_ig",
        "rubric": rubric,
        "status": "ok",
        "score": score,
        "sub_scores": [],
        "model": model,
        "judge": "j",
    }


def test_the_report_counts_samples_not_lines(tmp_path: Path) -> None:
    # a rerun's record replaces the first one of the same id: the last record wins
    lines = [_record("a", 0.2), _record("b", 0.4), _record("a", 0.8), _record("c", 0.6)]
    path = write_jsonl(tmp_path / "results.jsonl", lines)
    report = build_report([path], n_boot=20)
    cell = report.leaderboards[0].overall["G"]
    assert cell.n == 3 and cell.mean == pytest.approx((0.8 + 0.4 + 0.6) / 3)
    assert report.runs[0].duplicates == ["a"]
    (problem,) = [p for p in report.problems if "more than one record" in p]
    assert "1 sample id(s)" in problem and "'a'" in problem
    assert "Problems (" in report.to_html()


def test_scores_out_of_range_in_an_older_file_are_listed_and_left_out(tmp_path: Path) -> None:
    lines = [_record("a", 0.5), _record("b", 7.0), _record("c", -0.5), _record("d", 0.7)]
    path = write_jsonl(tmp_path / "results.jsonl", lines)
    report = build_report([path], n_boot=20)
    cell = report.leaderboards[0].overall["G"]
    assert cell.n == 2 and cell.errors == 2 and cell.mean == pytest.approx(0.6)
    problems = [p for p in report.problems if "outside the range" in p]
    assert len(problems) == 2
    assert "7.0 is outside the range [0, 1] of rubric 'cigeval'" in problems[0]
    assert "left out of every mean" in problems[0]


class _FixedRubric:
    """A user rubric returning one value whatever the sample."""

    description = "returns a fixed value"

    def __init__(self, name: str, value: float, score_range: tuple[float, float] | None) -> None:
        self.name = name
        self.value = value
        if score_range is not None:
            self.score_range = score_range

    def validate(self, sample: Any) -> None:
        return None

    async def evaluate(self, run: Any) -> Verdict:
        return Verdict(value=self.value)


@pytest.mark.parametrize(
    ("value", "declared", "status"),
    [(7.0, None, "error"), (-0.5, None, "error"), (0.7, None, "ok"), (7.0, (0, 10), "ok")],
)
def test_a_value_outside_the_rubrics_range_is_an_error_at_the_source(
    tmp_path: Path, value: float, declared: tuple[float, float] | None, status: str
) -> None:
    name = f"fixed_{abs(hash((value, declared)))}"
    register_rubric(_FixedRubric(name, value, declared), replace=True)
    try:
        sample = seven_task_samples(tmp_path)[0]
        evaluator = Evaluator(
            ScriptedBackend(["unused"]), rubric=name, run_config=RunConfig(use_cache=False)
        )
        result = evaluator.run([{**sample, "images": {"output": str(tmp_path / "output.png")}}],
                               out=tmp_path / "out.jsonl", quiet=True)  # fmt: skip
        (record,) = read_records(tmp_path / "out.jsonl")
    finally:
        RUBRICS.unregister(name)
    assert record["status"] == status
    if status == "error":
        assert record["score"] is None
        low, high = declared or (0, 1)
        assert record["error"] == (
            f"rubric {name!r} returned the score {value!r}, outside its range "
            f"[{low:g}, {high:g}]; refused (a rubric declares its range as score_range)"
        )
        assert result.exit_status == 1
    else:
        assert record["score"] == value
        # a declared range travels with the record: read back after the rubric is gone
        assert record.get("score_range") == (list(declared) if declared else None)
        assert score_of(record) == value
