"""``cigeval calibrate votes``: the contract's JSON and predictions, a jury kept when it helps
on judges the code never saw, rejected when it cannot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cigeval.calibration import decide, load_calibration
from cigeval.cli import main
from cigeval.meta.calibrate import calibrate_votes
from tests.calibration.synthetic import votes_file

pytest.importorskip("sklearn")


def test_the_jury_learns_what_each_judge_means_and_the_figures_can_be_recomputed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = votes_file(tmp_path / "votes.jsonl")
    out, cal = tmp_path / "pred.jsonl", tmp_path / "cal.json"
    argv = ["calibrate", "votes", str(votes), "--splits", "3", "--seed", "0", "--json"]
    status = main([*argv, "--predictions", str(out), "-o", str(cal), "--bootstrap", "200"])
    assert status == 0
    held = json.loads(capsys.readouterr().out)["heldout"]
    assert len(held["per_split"]) == 3
    assert set(held["per_split"][0]) == {"best_single", "jury"}
    assert held["best_single"] == pytest.approx(
        sum(s["best_single"] for s in held["per_split"]) / 3
    )
    # ``sharp`` calls both-bad pairs good ties, ``bad_eye`` spots both-bad: a jury learns both
    assert held["jury"] > held["best_single"] + 0.1
    assert held["gain_interval"][0] > 0
    human = {
        json.loads(line)["idx"]: json.loads(line)["human_vote"]
        for line in votes.read_text().splitlines()
    }
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(set(row) == {"split", "idx", "jury", "best_single"} for row in rows)
    for k, split in enumerate(held["per_split"]):
        mine = [r for r in rows if r["split"] == k]
        for name in ("jury", "best_single"):
            right = sum(r[name] == human[r["idx"]] for r in mine)
            assert right / len(mine) == pytest.approx(split[name])
    calibration = load_calibration(cal)
    assert calibration.kind == "votes" and calibration.steps[0].kept
    assert calibration.votes is not None and calibration.votes.use == "jury"
    said = decide(calibration, [{"sharp": "A=B=Good", "bad_eye": "A=B=Bad", "coin": None}])
    assert said == ["A=B=Bad"]


def test_a_jury_that_cannot_help_is_rejected_and_the_best_judge_kept(tmp_path: Path) -> None:
    votes = votes_file(tmp_path / "votes.jsonl", seed=2, informative_copy=True)
    result = calibrate_votes(votes, splits=3, n_boot=200)
    step = result.calibration.steps[0]
    assert not step.kept and "does not lie above zero" in step.reason
    assert result.calibration.votes is not None
    assert result.calibration.votes.use == "best_single"
    assert decide(result.calibration, [{"honest": "B>A", "copy": "B>A"}]) == ["B>A"]


def test_a_bad_line_is_left_out_with_a_note(tmp_path: Path) -> None:
    votes = votes_file(tmp_path / "votes.jsonl", pairs=120)
    with votes.open("a") as handle:
        handle.write('{"idx": 999, "human_vote": "maybe", "votes": {"sharp": "A>B"}}\nnot json\n')
    result = calibrate_votes(votes, splits=2, n_boot=0)
    assert result.heldout["pairs"] == 120
    assert any("line 121" in note and "human_vote" in note for note in result.notes)
    assert any("line 122" in note for note in result.notes)
