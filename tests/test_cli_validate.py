"""``cigeval validate`` finds every problem of a samples file without a model."""

from __future__ import annotations

import json
from pathlib import Path

from cigeval.cli import main
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl


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
    *problems, summary = [json.loads(line) for line in out.splitlines()]
    assert [p["id"] for p in problems] == ["nofile", "noprompt", "t2i", "@line:11"]
    assert "gone.png" in problems[0]["error"] and "prompt" in problems[1]["error"]
    assert "repeated" in problems[2]["error"] and "JSON object" in problems[3]["error"]
    assert summary["summary"]["valid"] == 7 and summary["summary"]["invalid"] == 4
    assert err == ""  # the report is data: all of it on stdout


def test_validate_all_good_exits_0_and_checks_the_rubric(tmp_path: Path, capsys):
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:3])
    assert main(["validate", str(samples)]) == 0
    assert main(["validate", str(samples), "--rubric", "lmm_score"]) == 1  # needs a source image
    assert main(["validate", str(samples), "--rubric", "nope"]) == 2
    assert main(["validate", str(tmp_path / "missing.jsonl")]) == 2


def test_a_misspelled_required_field_is_named_as_missing_with_the_misspelling(
    tmp_path: Path, capsys
) -> None:
    good = {s["id"]: s for s in seven_task_samples(tmp_path)}["tie"]
    misspelled = {**good, "id": "typo"}
    misspelled["instuction"] = misspelled.pop("instruction")
    wrong_role = {**good, "id": "role", "images": dict(good["images"])}
    wrong_role["images"]["sorce"] = wrong_role["images"].pop("source")
    stray = {**good, "id": "stray", "metdata": {"k": 1}}
    samples = write_jsonl(tmp_path / "s.jsonl", [misspelled, wrong_role, stray])
    assert main(["validate", str(samples)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "line 1: sample 'typo': missing required field 'instruction' "
        "(did you mean it instead of 'instuction'?)",
        "line 2: sample 'role': missing required image 'images.source' "
        "(did you mean it instead of 'images.sorce'?)",
        "line 3: sample 'stray': unknown field 'metdata' (did you mean 'metadata'?)",
        "0 valid, 3 invalid sample(s)",
    ]
    assert err == ""


def test_each_problem_carries_its_prefixes_once(tmp_path: Path, capsys) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        'not json\n{"id": "t", "task": "no_such_task"}\n{"id": [1], "task": "text_guided_ig"}\n'
    )
    assert main(["validate", str(samples)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("line 1: invalid JSON (")
    assert lines[1].startswith("line 2: sample 't': unknown task 'no_such_task'; choose one of")
    assert lines[2] == "line 3: id must be a string (in quotes), got a list [1]"
    for line in lines[:3]:
        rest = line.split(": ", 1)[1]
        assert not rest.startswith("line "), line
        assert "Value error" not in line and "sample: " not in line, line
