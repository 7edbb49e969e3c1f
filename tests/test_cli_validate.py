"""``cigeval validate`` finds every problem of a samples file without a model."""

from __future__ import annotations

import json
from pathlib import Path

from cigeval.cli import main
from tests.samples_factory import seven_task_samples, write_jsonl


def test_validate_reports_each_bad_line_and_exits_1(tmp_path: Path, capsys):
    good = seven_task_samples(tmp_path)
    bad = [
        {"id": "nofile", "task": "text_guided_ig", "prompt": "x", "images": {"output": "gone.png"}},
        {"id": "noprompt", "task": "text_guided_ig", "images": {"output": "output.png"}},
        dict(good[0]),  # repeated id
    ]
    samples = write_jsonl(tmp_path / "s.jsonl", [*good, *bad])
    with samples.open("a") as handle:
        handle.write("[1, 2]\n")
    assert main(["validate", str(samples), "--json"]) == 1
    out, err = capsys.readouterr()
    problems = [json.loads(line) for line in out.splitlines()]
    assert [p["id"] for p in problems] == ["nofile", "noprompt", "t2i", "line:11"]
    assert "gone.png" in problems[0]["error"] and "prompt" in problems[1]["error"]
    assert "repeated" in problems[2]["error"] and "JSON object" in problems[3]["error"]
    assert "7 valid, 4 invalid" in err


def test_validate_all_good_exits_0_and_checks_the_rubric(tmp_path: Path, capsys):
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:3])
    assert main(["validate", str(samples)]) == 0
    assert main(["validate", str(samples), "--rubric", "lmm_score"]) == 1  # needs a source image
    assert main(["validate", str(samples), "--rubric", "nope"]) == 2
    assert main(["validate", str(tmp_path / "missing.jsonl")]) == 2
