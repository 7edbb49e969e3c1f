"""Calibrating scores on data no calibration was fitted to: a judge and ratings the tests
make, the ImagenHub layout without the shipped files. Coverage near nominal, each step gated,
the file reproduces the held-out predictions, records of another judge refused."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from cigeval.calibration import (
    CalibrationMismatch,
    calibrate_records,
    calibrated_field,
    load_calibration,
)
from cigeval.cli import main
from cigeval.meta.calibrate import calibrate_labels
from tests.calibration.synthetic import imagenhub_like, results_and_labels

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[dict[str, Any]]]:
    """One calibration of a synthetic judge on 1-5 ratings (3-fold), and its records."""
    results, labels, records = results_and_labels(tmp_path_factory.mktemp("labels"))
    return calibrate_labels([results], labels, folds=3, n_boot=100), records


def test_labels_on_a_new_judge_and_scale(fitted: tuple[Any, list[dict[str, Any]]]) -> None:
    result, records = fitted
    held = result.heldout
    # 360 held-out ratings on a 1-5 scale, nominal 90%
    assert 0.82 <= held["coverage"] <= 0.97
    steps = {s.step: s for s in result.calibration.steps}
    assert steps["map"].kept  # the judge's 0-1 scores are not on the 1-5 scale
    assert not steps["jury"].kept and steps["jury"].reason == "not tried: one judge"
    for row in result.predictions:
        low, high = row["interval"]
        assert 1.0 <= low <= row["value"] <= high <= 5.0 or low <= high
    # the file applied to the records: values on the label scale, every record calibrated
    calibration = load_calibration(json.loads(result.calibration.to_json()))
    calibrated = calibrate_records(calibration, records)
    assert all(1.0 <= r["calibrated"]["value"] <= 5.0 for r in calibrated)
    assert all(len(r["calibrated"]["interval"]) == 2 for r in calibrated)
    # a better score maps to a calibrated value at least as high (the map is monotone)
    ordered = sorted(calibrated, key=lambda r: (r["task"], r["score"]))
    for a, b in itertools.pairwise(ordered):
        if a["task"] == b["task"] and not steps["aggregation"].kept:
            assert a["calibrated"]["value"] <= b["calibrated"]["value"] + 1e-12


def test_a_file_fitted_for_another_judge_is_refused(
    tmp_path: Path, fitted: tuple[Any, list[dict[str, Any]]]
) -> None:
    calibration = fitted[0].calibration
    _, _, others = results_and_labels(tmp_path / "other", prompts=4, judge="openai:other-judge")
    with pytest.raises(CalibrationMismatch) as raised:
        calibrate_records(calibration, others)
    assert "judges" in str(raised.value) and "openai:other-judge" in str(raised.value)
    changed = dict(others[0], judge="openai:synthetic-judge")
    changed["provenance"] = dict(
        others[0]["provenance"],
        prompt_set="custom:0123",
        judges=[{"judge": "openai:synthetic-judge", "prompt_set": "custom:0123"}],
    )
    with pytest.raises(CalibrationMismatch, match="prompt_set"):
        calibrate_records(calibration, [changed])


def test_imagenhub_contract_on_the_imagenhub_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in").mkdir()
    ratings, good, weak, split = imagenhub_like(tmp_path / "in", uids=12)
    cal, pred = tmp_path / "cal.json", tmp_path / "pred.jsonl"
    argv = ["calibrate", "imagenhub", "--scores", str(good), "--scores", str(weak)]
    argv += ["--split", str(split), "--human-ratings", str(ratings), "--json", "-o", str(cal)]
    assert main([*argv, "--predictions", str(pred), "--bootstrap", "50"]) == 0
    held = json.loads(capsys.readouterr().out)["heldout"]
    for key in ("coverage", "best_single", "calibrated", "wtl_before", "wtl_after"):
        assert isinstance(held[key], float), key
    assert len(held["coverage_by_task"]) == 7
    assert len(held["gain_interval"]) == 2
    assert held["best_single_judge"] == ["good_judge"]
    rows = [json.loads(line) for line in pred.read_text().splitlines()]
    assert rows and all(
        set(r) == {"task", "model", "uid", "human", "value", "interval"} for r in rows
    )
    # 'human' is the raters' mean SC, as meta reads it
    row = next(r for r in rows if r["task"] == "mask_guided_ie")
    folder = ratings / "ImagenHub_Mask-Guided_IE"
    cells = []
    for rater in (1, 2, 3):
        lines = (folder / f"Synthetic_rater{rater}.tsv").read_text().splitlines()
        models = lines[0].split("\t")[1:]
        line = next(x for x in lines[1:] if x.split("\t")[0] == row["uid"])
        cells.append(json.loads(line.split("\t")[1 + models.index(row["model"])])[0])
    assert row["human"] == pytest.approx(statistics.mean(cells))
    test_uids = json.loads(split.read_text())["test"]
    assert all(r["uid"] in test_uids[r["task"]] for r in rows)  # held-out images only
    calibration = load_calibration(cal)
    assert calibration.binding.judges[0] == "table:good_judge"
    assert calibration.data["fingerprint"] and calibration.dimension == "SC"


def test_calibrated_field_says_why_it_has_no_value(
    fitted: tuple[Any, list[dict[str, Any]]],
) -> None:
    calibration, records = fitted[0].calibration, fitted[1]
    other_task = dict(records[0], task="multi_concept_ic")
    field = calibrated_field(calibration, other_task)
    assert field is not None and field["value"] is None and "multi_concept_ic" in field["note"]
    assert calibrated_field(calibration, dict(records[0], status="error", score=None)) is None
    wide = calibrated_field(calibration, records[0], abstain_width=0.0)
    assert wide is not None and wide["abstain"] is True


def test_the_best_single_judge_scores_every_task() -> None:
    import numpy as np

    from cigeval.meta.calibrate.pipeline import Items, _best_judge

    rng = np.random.default_rng(0)
    human = rng.uniform(0, 1, 60)
    tasks = np.asarray(["a"] * 30 + ["b"] * 30)
    everywhere = human + rng.normal(0, 0.3, 60)  # scores every item, imperfectly
    one_task = np.where(tasks == "a", human, np.nan)  # perfect, but on task a only
    items = Items(
        keys=list(range(60)),
        tasks=tasks,
        cells=np.asarray(["m"] * 60),
        groups=np.asarray([str(i) for i in range(60)]),
        human=human,
        stock=np.column_stack([one_task, everywhere]),
        subs=[[np.zeros(0)] * 60, [np.zeros(0)] * 60],
    )
    assert _best_judge(items, np.arange(60)) == 1


def test_pairwise_labels_learn_a_tie_band(tmp_path: Path) -> None:
    """People tie two images whose hidden qualities are close; the judge's scores are noisy
    readings of them, so exact ties are too rare and a band helps."""
    import csv

    import numpy as np

    from tests.calibration.synthetic import record

    rng = np.random.default_rng(5)
    records, pairs = [], []
    for p in range(150):
        quality = rng.uniform(0, 1, 2)
        for g in range(2):
            subs = [float(np.clip(10 * quality[g] + rng.normal(0, 0.7), 0, 10)) for _ in range(2)]
            records.append(record(f"p{p}-g{g}", "text_guided_ig", subs, f"gen{g}", f"u{p}"))
        gap = quality[0] - quality[1]
        pairs.append(
            (f"p{p}-g0", f"p{p}-g1", "tie" if abs(gap) < 0.25 else "A" if gap > 0 else "B")
        )
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    labels = tmp_path / "pairs.csv"
    with labels.open("w", newline="") as handle:
        csv.writer(handle).writerows([("id_a", "id_b", "preference"), *pairs])
    result = calibrate_labels([results], labels, folds=3, n_boot=200)
    (step,) = result.calibration.steps
    assert step.step == "tie_band" and step.kept, step.reason
    assert result.heldout["accuracy_after"] > result.heldout["accuracy_before"] + 0.1
    band = result.calibration.tasks["*"].tie_band
    assert 0.05 < band < 0.5
