"""``Evaluator.run`` and ``cigeval.runs.run_samples``: a run from Python keeps the guarantees
of ``cigeval evaluate`` (lock, resume, one record per sample, summary, end-of-run callbacks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import cigeval
from cigeval import ConfigError, Evaluator, ScriptedBackend
from cigeval._caller import command_line
from cigeval.config import RUN_FILE_FIELDS, EvalConfig, RunConfig
from cigeval.results import ResultsLock, ResultsLocked, read_records
from cigeval.runs import RunOptions, RunResult, run_samples
from cigeval.sample import iter_samples_file, sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl

TOOLS = EvalConfig(tools=("Difference",))


def _evaluator(tmp_path: Path, **scores: int) -> Evaluator:
    judge = ScriptedBackend(rule_judge(scores))
    return Evaluator(
        judge,
        config=TOOLS,
        run_config=RunConfig(use_cache=False, preflight=False, image_dir=tmp_path / "images"),
    )


def _absolute(images: dict[str, Any], folder: Path) -> dict[str, Any]:
    return {
        role: [str(folder / v) for v in value] if isinstance(value, list) else str(folder / value)
        for role, value in images.items()
    }


def _plans(evaluator: Evaluator) -> int:
    backend = evaluator.backend
    return sum("### Task" in request_text(r) for r in backend.requests)  # type: ignore[attr-defined]


def test_a_run_from_samples_in_memory_resumes_and_reports_at_the_end(tmp_path: Path) -> None:
    rows = seven_task_samples(tmp_path / "data")
    samples = [sample_from_dict(r, base_dir=tmp_path / "data") for r in rows]
    out = tmp_path / "out.jsonl"
    seen: list[RunResult] = []
    evaluator = _evaluator(tmp_path, prompt_following=4)

    first = evaluator.run(samples, out=out, limit=3, quiet=True, callbacks=[seen.append])
    # records arrive in completion order: the first three samples, in any order
    assert sorted(r["id"] for r in read_records(out)) == sorted(s.id for s in samples[:3])
    assert first.summary.statuses["ok"] == 3 and first.exit_status == 0
    assert seen == [first] and seen[0].out == out and seen[0].config == evaluator.config

    # the same samples again, as dicts: only the four still missing are judged
    dicts = [{**r, "images": _absolute(r["images"], tmp_path / "data")} for r in rows]
    second = evaluator.run(dicts, out=out, quiet=True)
    assert second.summary.skipped == 3 and second.summary.statuses["ok"] == 4
    ids = [r["id"] for r in read_records(out)]
    assert sorted(ids) == sorted(r["id"] for r in rows) and len(ids) == len(set(ids))
    assert _plans(evaluator) == 7
    t2i = next(r for r in read_records(out) if r["id"] == "t2i")
    assert t2i["score"] == pytest.approx(0.4)
    assert "7 ok" not in str(second) and "4 evaluated (4 ok, 0 error)" in str(second)


def test_repeated_ids_are_judged_once_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = seven_task_samples(tmp_path / "data")[:2]
    evaluator = _evaluator(tmp_path)
    items = [sample_from_dict(r, base_dir=tmp_path / "data") for r in [*rows, rows[0]]]
    result = run_samples(evaluator, items, tmp_path / "out.jsonl", quiet=True)
    assert result.duplicates == 1
    assert "repeated at item 3" in capsys.readouterr().err
    assert "1 repeated sample id(s) were not evaluated" in result.render()
    assert len(list(read_records(tmp_path / "out.jsonl"))) == 2


def test_a_held_results_file_is_refused_before_any_sample(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:1])
    evaluator = _evaluator(tmp_path)
    out = tmp_path / "out.jsonl"
    with ResultsLock(out), pytest.raises(ResultsLocked):
        evaluator.run(samples, out=out, quiet=True)
    assert not evaluator.backend.requests  # type: ignore[attr-defined]


def test_a_failing_callback_is_reported_and_the_others_still_run(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:1])
    called: list[int] = []

    def broken(result: RunResult) -> None:
        raise RuntimeError("tracker offline")

    result = _evaluator(tmp_path).run(
        samples,
        out=tmp_path / "out.jsonl",
        quiet=True,
        callbacks=[broken, lambda r: called.append(r.exit_status)],
    )
    assert called == [0]
    assert "end-of-run callback broken failed: RuntimeError: tracker offline" in result.render()


def test_samples_file_lines_and_options_object(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:2])
    out = tmp_path / "out.jsonl"
    evaluator = _evaluator(tmp_path)
    evaluator.run(list(iter_samples_file(samples)), out=out, quiet=True)
    again = evaluator.run(samples, out=out, options=RunOptions(overwrite=True), quiet=True)
    assert again.summary.statuses["ok"] == 2 and again.summary.skipped == 0
    assert len(list(read_records(out))) == 2
    assert "trace" not in next(
        iter(read_records(evaluator.run(samples, out=tmp_path / "b.jsonl", quiet=True,
                                         include_trace=False).out))
    )  # fmt: skip


def test_run_options_are_run_config_fields_read_from_the_judge_or_the_call(
    tmp_path: Path,
) -> None:
    assert cigeval.RunOptions is RunOptions is RunConfig  # the former name still imports
    assert set(RUN_FILE_FIELDS) < set(RunConfig.model_fields)
    with pytest.raises(ValueError, match="limit"):
        RunOptions(limit=-1)
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:3])
    judge = ScriptedBackend(rule_judge({}))
    settings = RunConfig(use_cache=False, preflight=False, limit=1, include_trace=False)
    evaluator = Evaluator(judge, config=TOOLS, run_config=settings)
    result = evaluator.run(samples, out=tmp_path / "a.jsonl", quiet=True)
    (record,) = read_records(result.out)  # the judge's run config: one sample, no trace
    assert "trace" not in record
    assert result.run_config.limit == 1 and result.options is result.run_config
    wider = evaluator.run(samples, out=tmp_path / "b.jsonl", quiet=True, limit=2)
    assert len(list(read_records(wider.out))) == 2  # the call's option wins
    with pytest.raises(ConfigError, match="invalid run options: concurrency: not a run option"):
        evaluator.run(samples, out=tmp_path / "c.jsonl", quiet=True, concurrency=4)


def test_a_python_run_gives_its_advice_as_keywords_and_the_command_as_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a run says on stderr and in its summary names the keyword a script can pass
    (``recheck_images=False``, ``retry_errors=True``), the flag only inside a command."""
    Image.new("RGB", (32, 32), "red").save(tmp_path / "a.png")
    rows = [
        {"id": "kept", "task": "text_guided_ig", "prompt": "red", "images": {"output": "a.png"}},
        {"id": "gone", "task": "text_guided_ig", "prompt": "red", "images": {"output": "no.png"}},
    ]
    samples = [sample_from_dict(r, base_dir=tmp_path) for r in rows]
    out = tmp_path / "out.jsonl"
    _evaluator(tmp_path).run(samples, out=out, quiet=True)
    Image.new("RGB", (32, 32), "blue").save(tmp_path / "a.png")
    capsys.readouterr()
    again = _evaluator(tmp_path).run(samples, out=out, quiet=True)
    said = capsys.readouterr().err + again.render()
    assert "recheck_images=False keeps the record" in said
    assert "run with retry_errors=True to try them again" in said
    assert "--" not in said
    with command_line():
        assert "rerun with --retry-errors" in again.render()
