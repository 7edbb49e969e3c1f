"""The meta command line: JSON shape, readable table, split and export commands, errors."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from cigeval._caller import command_line
from cigeval.cli import build_parser
from cigeval.cli.meta import run_meta
from cigeval.tasks.ids import PAPER_TASK_ORDER


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Parse and run as the ``cigeval`` command does (advice in flags); (exit status, stdout,
    stderr)."""
    try:
        with command_line():
            status = run_meta(build_parser().parse_args(["meta", *argv]))
    except SystemExit as exc:  # argparse usage errors
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_ensemble_command_of_issue_6(scores_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        [
            "imagenhub",
            "--scores",
            str(scores_dir / "gpt4o_0shot.tsv"),
            "--scores",
            str(scores_dir / "gpt4o_1shot.tsv"),
            "--format",
            "viescore",
            "--combine",
            "mean",
            "--dimension",
            "SC",
            "--aggregate",
            "paper",
            "--json",
        ],
        capsys,
    )
    assert status == 0
    data = json.loads(out)
    assert list(data["tasks"]) == list(PAPER_TASK_ORDER)
    assert data["average"] == pytest.approx(0.4638, abs=1e-3)
    assert data["coverage"]["totals"]["used"] == 4801
    assert data["evaluator"] == "mean(gpt4o_0shot, gpt4o_1shot)"


def test_several_scores_without_combine_are_one_row_per_judge(
    scores_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["imagenhub", "--scores", str(scores_dir / "gpt4o_0shot.tsv")]
    argv += ["--scores", str(scores_dir / "gpt4o_1shot.tsv")]
    status, out, _ = run(argv, capsys)
    assert status == 0
    rows = {line.split("|")[0].strip(): line.split("|")[-1].strip() for line in out.splitlines()}
    assert rows["gpt4o_0shot"] == "0.4459" and rows["gpt4o_1shot"] == "0.4313"
    status, out, _ = run([*argv, "--json"], capsys)
    data = json.loads(out)
    assert [row["evaluator"] for row in data["rows"]] == ["gpt4o_0shot", "gpt4o_1shot"]
    assert [row["average"] for row in data["rows"]] == pytest.approx([0.4459, 0.4313], abs=1e-4)


def test_tiebreak_command_reproduces_the_measured_average(
    scores_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = str(scores_dir / "gpt4o_0shot.tsv")
    averages = {}
    for rule in ("min", "min_tiebreak_mean"):
        argv = ["imagenhub", "--scores", table, "--list-aggregate", rule, "--json"]
        status, out, _ = run(argv, capsys)
        assert status == 0
        data = json.loads(out)
        assert data["evaluator"] == f"gpt4o_0shot [{rule}]"
        averages[rule] = round(data["average"], 4)
    assert averages == {"min": 0.4459, "min_tiebreak_mean": 0.4483}


def test_human_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["imagenhub", "--human", "--round", "4", "--json"], capsys)
    assert status == 0
    data = json.loads(out)
    assert {"tasks", "average", "coverage", "per_model", "undefined"} <= set(data)
    assert all(isinstance(v, float) for v in data["tasks"].values())
    assert data["average"] == 0.47
    assert data["per_model"]["text_guided_ie"].keys() >= {"MagicBrush"}
    assert "Imagic" not in data["per_model"]["text_guided_ie"]
    status, out, _ = run(["imagenhub", "--human", "--json", "--all-models"], capsys)
    assert "Imagic" in json.loads(out)["per_model"]["text_guided_ie"]


def test_readable_table(scores_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        ["imagenhub", "--scores", str(scores_dir / "gpt4o_0shot.tsv"), "--bootstrap", "50"],
        capsys,
    )
    assert status == 0
    lines = out.splitlines()
    assert lines[1].split("|")[1].strip() == "Text-Guided IG"
    assert lines[1].split("|")[-1].strip() == "Average"
    assert lines[3].split("|")[-1].strip() == "0.4459"
    assert lines[4].startswith("95% CI")
    assert any(line.startswith("coverage: 4801 of 4801") for line in lines)


def test_split_then_subset(tmp_path: Path, scores_dir: Path, capsys) -> None:
    split = tmp_path / "split.json"
    status, out, err = run(["split", "--out", str(split), "--seed", "3"], capsys)
    assert status == 0 and out == "" and "test samples" in err and split.exists()
    status, out, _ = run(
        [
            "imagenhub",
            "--scores",
            str(scores_dir / "gpt4o_0shot.tsv"),
            "--split",
            str(split),
            "--subset",
            "test",
            "--json",
        ],
        capsys,
    )
    data = json.loads(out)
    assert status == 0 and data["coverage"]["totals"]["used"] < 4801
    assert any("test side" in note for note in data["notes"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["imagenhub", "--scores", "absent.tsv"], "cannot read"),
        (["imagenhub", "--scores", "a.tsv", "--scores", "b.tsv", "--label", "x"], "--label"),
        (["imagenhub", "--human", "--split", "s.json"], "--split and --subset"),
        (["export-trajectories", "absent.jsonl", "--out", "x.jsonl"], "cannot read"),
        (
            ["imagenhub", "--scores", "r.jsonl", "--list-aggregate", "min_tiebreak_mean"],
            "VIEScore-style tables only",
        ),
    ],
)
def test_bad_input_exits_2(
    argv: list[str], message: str, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    status, out, err = run(argv, capsys)
    assert status == 2 and message in err and out == ""


@pytest.mark.parametrize(
    "argv", [["imagenhub"], ["imagenhub", "--human", "--dimension", "XY"], ["nothing"]]
)
def test_usage_errors_exit_2(argv: list[str], capsys) -> None:
    status, _, err = run(argv, capsys)
    assert status == 2 and "usage" in err


def test_export_command(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results.jsonl"
    call = {
        "type": "model_call",
        "purpose": "judge",
        "model": "j",
        "reply": "8",
        "messages": [{"role": "user", "text": "Rate.", "images": []}],
    }
    results.write_text(
        json.dumps(
            {
                "id": "x",
                "task": "text_guided_ig",
                "model": "SD",
                "status": "ok",
                "score": 0.8,
                "trace": [call],
            }
        )
        + "\n"
    )
    status, out, err = run(
        ["export-trajectories", str(results), "--out", str(tmp_path / "o.jsonl")], capsys
    )
    assert status == 0 and out == ""
    assert f"wrote 1 conversations from 1 samples (1 records read) to {tmp_path}" in err


def test_export_lists_missing_images_and_exits_1(tmp_path: Path, capsys) -> None:
    sha = "ab" * 32
    call = {
        "type": "model_call",
        "purpose": "judge",
        "model": "j",
        "reply": "8",
        "messages": [
            {"role": "user", "text": "Rate.", "images": [{"sha256": sha, "label": "output"}]}
        ],
    }
    record = {"id": "old", "task": "text_guided_ig", "status": "ok", "score": 0.8, "trace": [call]}
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(record) + "\n")
    status, out, err = run(
        ["export-trajectories", str(results), "--out", str(tmp_path / "o.jsonl")], capsys
    )
    assert status == 1 and out == ""
    assert "wrote 0 conversations" in err and "1 missing image file" in err
    assert f"sample old: image {sha[:12]} (output): not listed" in err
    assert (tmp_path / "o.jsonl").read_text() == ""


def test_split_from_a_results_file_of_any_dataset(tmp_path: Path, capsys) -> None:
    records = [
        {"id": f"{task}-{n}", "task": task, "metadata": {"uid": f"u{n}"}, "model": model}
        for task in ("my_task", "text_guided_ig")
        for n in range(10)
        for model in ("A", "B")
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    split_file = tmp_path / "split.json"
    argv = ["split", "--from", str(results), "--out", str(split_file), "--test-fraction", "0.3"]
    status, out, err = run(argv, capsys)
    assert status == 0 and "14 train and 6 test samples" in err and out == ""
    data = json.loads(split_file.read_text())
    assert data["counts"]["test"] == {"my_task": 3, "text_guided_ig": 3}
    assert set(data["train"]["my_task"]) | set(data["test"]["my_task"]) == {
        f"u{n}" for n in range(10)
    }


def test_python_dash_m_runs_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Runs the package the way ``python -m cigeval meta`` does, without a second interpreter.
    argv = ["python -m cigeval", "meta", "imagenhub", "--human", "--round", "4", "--json"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("cigeval", run_name="__main__", alter_sys=True)
    assert exit_info.value.code == 0
    assert json.loads(capsys.readouterr().out)["average"] == 0.47
