"""Every input cell is read as its format says: else exit 2 naming file, line and cell, or
with --lenient the cell is skipped and counted (issue 23's malformed cells)."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest

from cigeval.meta import load_human_ratings
from tests.meta.test_cli import run

RATER_FILE = "ImagenHub_Text-Guided_IG/Text-To-Image_rater1.tsv"


def _replace_cell(source: Path, target: Path, line: int, column: int, cell: str) -> None:
    """Write ``source`` to ``target`` with the cell at (``line``, ``column``), 0-based,
    replaced by ``cell``."""
    lines = source.read_text(encoding="utf-8").splitlines()
    fields = lines[line].split("\t")
    fields[column] = cell
    lines[line] = "\t".join(fields)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _table_with(tmp_path: Path, scores_dir: Path, cell: str) -> Path:
    """The recorded GPT-4o table with the SC cell of its second data row replaced."""
    path = tmp_path / "judge.tsv"
    _replace_cell(scores_dir / "gpt4o_0shot.tsv", path, 2, 3, cell)
    return path


@pytest.mark.parametrize(
    ("cell", "reason"),
    [
        ("[1e3, 5]", "1000 is outside [0, 10]"),
        ("[7, x]", "not a number or a JSON list of numbers"),
        ("[11, 5]", "11 is outside [0, 10]"),
        ("[-3, 2]", "-3 is outside [0, 10]"),
        ("[4, 4, 4]", "3 scores where the prompt asks for at most 2"),
    ],
)
def test_malformed_viescore_cells_exit_2_naming_file_line_and_cell(
    cell: str, reason: str, tmp_path: Path, scores_dir: Path, capsys
) -> None:
    table = _table_with(tmp_path, scores_dir, cell)
    status, out, err = run(["imagenhub", "--scores", str(table)], capsys)
    assert status == 2 and out == ""
    assert f"{table} line 3, sc_score: {cell!r}: {reason}" in err
    assert "--lenient" in err  # says how to go on anyway

    status, out, err = run(["imagenhub", "--scores", str(table), "--lenient", "--json"], capsys)
    assert status == 0
    data = json.loads(out)
    assert data["coverage"]["totals"]["missing"] == 1  # the cell is not read as any score
    assert data["coverage"]["totals"]["used"] == 4800
    assert any("1 malformed cell(s) skipped" in note for note in data["notes"])
    assert "--lenient: 1 malformed cell(s) skipped" in err


def _ratings_with(tmp_path: Path, cell: str) -> Path:
    """A copy of the shipped rating files with one rater's first cell replaced."""
    shipped = Path(str(resources.files("cigeval.data").joinpath("imagenhub_human_ratings")))
    folder = tmp_path / "ratings"
    shutil.copytree(shipped, folder)
    _replace_cell(folder / RATER_FILE, folder / RATER_FILE, 1, 1, cell)
    return folder


@pytest.mark.parametrize(
    ("cell", "reason"),
    [
        ("[5, 0.5]", "5 is not a rating (0, 0.5 or 1)"),
        ("[-1, 0.5]", "-1 is not a rating (0, 0.5 or 1)"),
        ("[0.5]", "expected a list of two ratings [SC, PQ]"),
        ("[0.7, 1]", "0.7 is not a rating"),
    ],
)
def test_malformed_human_ratings_exit_2_or_are_skipped(
    cell: str, reason: str, tmp_path: Path, capsys
) -> None:
    folder = _ratings_with(tmp_path, cell)
    argv = ["imagenhub", "--human", "--human-ratings", str(folder)]
    status, out, err = run(argv, capsys)
    assert status == 2 and out == ""
    assert f"{RATER_FILE} line 2, DALLE2 (uid sample_0.jpg): {cell!r}: {reason}" in err

    status, out, err = run([*argv, "--lenient", "--json"], capsys)
    assert status == 0
    data = json.loads(out)
    # the image lost one rater, so the human-vs-human row leaves it out, and says so
    assert data["per_model"]["text_guided_ig"]["DALLE2"]["n"] == 196
    assert any("1 malformed cell(s) skipped" in n for n in data["notes"])
    assert any("1 image(s) without a usable rating from every rater" in n for n in data["notes"])


def test_a_judge_is_correlated_with_leniently_read_ratings(
    tmp_path: Path, scores_dir: Path, capsys
) -> None:
    folder = _ratings_with(tmp_path, "[5, 0.5]")
    argv = ["imagenhub", "--scores", str(scores_dir / "gpt4o_0shot.tsv")]
    argv += ["--human-ratings", str(folder)]
    status, _, err = run(argv, capsys)
    assert status == 2 and "5 is not a rating" in err
    status, out, err = run([*argv, "--lenient", "--json"], capsys)
    data = json.loads(out)
    assert status == 0 and data["coverage"]["totals"]["used"] == 4801  # two raters remain
    assert "human ratings: --lenient: 1 malformed cell(s) skipped" in err


@pytest.mark.parametrize(
    ("value", "reason"),
    [(7.0, "7 is outside [0, 1]"), (-0.5, "-0.5 is outside [0, 1]"), ("high", "expected a number")],
)
def test_out_of_range_results_exit_2_or_are_skipped(
    value: object, reason: str, tmp_path: Path, capsys
) -> None:
    uids = load_human_ratings().loc[("mask_guided_ie", "Glide")].index[:3]
    records = [
        {"id": uid, "task": "mask_guided_ie", "model": "Glide", "status": "ok", "score": 0.5}
        for uid in uids
    ]
    records[1]["score"] = value
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    status, out, err = run(["imagenhub", "--scores", str(path)], capsys)
    assert status == 2 and out == ""
    assert f"{path} line 2, score: {value!r}: {reason}" in err
    status, out, _ = run(["imagenhub", "--scores", str(path), "--lenient", "--json"], capsys)
    assert status == 0
    assert json.loads(out)["coverage"]["per_model"]["mask_guided_ie"]["Glide"]["missing"] == 1


def test_a_declared_score_range_is_honoured(tmp_path: Path, capsys) -> None:
    record = {"id": "u", "task": "mask_guided_ie", "model": "Glide", "status": "ok", "score": 7}
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({**record, "score_range": [0, 10]}) + "\n", encoding="utf-8")
    status, _, err = run(["imagenhub", "--scores", str(path), "--json"], capsys)
    assert status == 0, err


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("ImagenHub_Mask-Guided_IE\tGlide\tsample_1.jpg\tLPIPS\t-0.2", "-0.2 is outside [0, inf]"),
        ("ImagenHub_Subject-Driven_IG\tDreamBooth\tsample_1.jpg\tDINO\t1.5", "outside [-1, 1]"),
        ("ImagenHub_Text-Guided_IG\tSD\tsample_1.jpg\tCLIP_Score\tnan", "not a finite number"),
        ("ImagenHub_Text-Guided_IG\tSD\tsample_1.jpg\tCLIP_Score\thigh", "not a number"),
    ],
)
def test_malformed_metric_values_exit_2(row: str, reason: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "metrics.tsv"
    path.write_text("task\tmodel\tuid\tmetric\tvalue\n" + row + "\n", encoding="utf-8")
    status, _, err = run(["imagenhub", "--scores", str(path), "--format", "autometrics"], capsys)
    assert status == 2 and f"{path} line 2, value (" in err and reason in err


def test_a_row_with_a_missing_cell_is_refused(tmp_path: Path, capsys) -> None:
    path = tmp_path / "short.tsv"
    path.write_text(
        "task\tmodel\tuid\tsc_score\tpq_score\nImagenHub_Mask-Guided_IE\tGlide\tu1\t[4, 9]\n",
        encoding="utf-8",
    )
    status, _, err = run(["imagenhub", "--scores", str(path)], capsys)
    assert status == 2 and f"{path} line 2: 4 cells for 5 columns" in err
