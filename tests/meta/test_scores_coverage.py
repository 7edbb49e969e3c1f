"""Score loaders and the coverage report on deliberately incomplete score files."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from cigeval.errors import InputError
from cigeval.meta import load_human_ratings, load_scores, meta_evaluate, records_to_frame
from cigeval.meta.scores import load_viescore_tsv, viescore_cell

TASK, MODEL = "mask_guided_ie", "Glide"


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("cell", "expected"),
    [("[7, 8]", 0.7), ("[0, 10]", 0.0), ("9", 0.9), ("[7.5]", 0.75), ("", math.nan)],
)
def test_viescore_cell(cell: str, expected: float) -> None:
    value = viescore_cell(cell)
    assert (math.isnan(value) and math.isnan(expected)) or value == pytest.approx(expected)


@pytest.mark.parametrize(
    ("cell", "reason"),
    [
        ("[1e3, 5]", "1000 is outside [0, 10]"),
        ("[7, x]", "not a number or a JSON list"),
        ("[11, 5]", "11 is outside [0, 10]"),
        ("[-3, 2]", "-3 is outside [0, 10]"),
        ('["10", 8]', '"10" is not a number'),
        ("[80]", "80 is outside"),
        ("[]", "empty list"),
        ("n/a", "not a number"),
        ("[NaN, 5]", "not a finite number"),
        ("[5, 5, 5]", "3 scores where the prompt asks for at most 2"),
    ],
)
def test_malformed_viescore_cells_are_refused(cell: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        viescore_cell(cell, max_length=2)


def test_viescore_cell_with_another_list_aggregate() -> None:
    assert viescore_cell("[6, 9, 9]", "min_tiebreak_mean") == pytest.approx(0.603)
    assert viescore_cell("[6, 9, 9]", "mean") == pytest.approx(0.8)
    assert viescore_cell("[7]", "min_tiebreak_mean") == pytest.approx(0.7)
    assert viescore_cell("[10, 10]", "min_tiebreak_mean") == 1.0
    with pytest.raises(InputError, match="unknown list aggregate"):
        load_viescore_tsv("any.tsv", rule="lowest")


def test_viescore_table_missing_policies(tmp_path: Path) -> None:
    table = tmp_path / "judge.tsv"
    table.write_text(
        "task\tmodel\tuid\tsc_score\tpq_score\n"
        "ImagenHub_Mask-Guided_IE\tGlide\tu1\t[4, 9]\t[6, 8]\n"
        "ImagenHub_Mask-Guided_IE\tGlide\tu2\t[5]\t\n",
        encoding="utf-8",
    )
    by_cell = load_viescore_tsv(table)
    assert by_cell.loc[(TASK, MODEL, "u1"), "SC"] == pytest.approx(0.4)
    assert by_cell.loc[(TASK, MODEL, "u1"), "O"] == pytest.approx(math.sqrt(0.4 * 0.6))
    assert by_cell.loc[(TASK, MODEL, "u2"), "SC"] == pytest.approx(0.5)
    assert math.isnan(by_cell.loc[(TASK, MODEL, "u2"), "O"])
    by_row = load_viescore_tsv(table, missing="row")
    assert math.isnan(by_row.loc[(TASK, MODEL, "u2"), "SC"])


def test_viescore_table_with_wrong_columns(tmp_path: Path) -> None:
    table = tmp_path / "bad.tsv"
    table.write_text("a\tb\n1\t2\n", encoding="utf-8")
    with pytest.raises(InputError, match="missing column"):
        load_viescore_tsv(table)


def test_incomplete_cigeval_results_coverage(tmp_path: Path) -> None:
    human = load_human_ratings()
    uids = sorted(human.loc[(TASK, MODEL)].index)
    assert len(uids) == 179
    rng = np.random.default_rng(0)
    records, used_x, used_y = [], [], []
    for i, uid in enumerate(uids):
        if i < 5:
            continue  # never evaluated: human-only
        record = {"id": uid, "task": TASK, "model": MODEL, "status": "ok", "sub_scores": []}
        if i < 9:
            record.update(status="error", score=None, error="backend failed")
        elif i == 9:
            record["score"] = None  # ok but without a value: missing
        else:
            h = float(human.loc[(TASK, MODEL, uid), "SC"])
            score = float(np.clip(h + rng.normal(0, 0.3), 0, 1))
            if i % 2:
                record["dimensions"] = {"SC": score, "PQ": 0.5}
                record["score"] = 0.0  # dimensions.SC wins over score
            else:
                record["score"] = score
            used_x.append(h)
            used_y.append(score)
        records.append(record)
    records.append(
        {"id": "not_a_sample.jpg", "task": TASK, "model": MODEL, "status": "ok", "score": 0.5}
    )
    records.append(
        {
            "id": uids[0],
            "task": "ImagenHub_Mask-Guided_IE",
            "model": "NewModel",
            "status": "ok",
            "score": 0.5,
        }
    )
    path = _write_jsonl(tmp_path / "results.jsonl", records)

    result = meta_evaluate(load_scores(path), "SC")
    cell = result.coverage.loc[(TASK, MODEL)]
    assert cell.to_dict() == {
        "n_human": 179,
        "n_evaluator": 175,
        "human_only": 5,
        "evaluator_only": 1,
        "failed": 4,
        "missing": 1,
        "partial": 0,
        "used": 169,
    }
    assert result.coverage.loc[(TASK, "NewModel"), "evaluator_only"] == 1
    totals = result.coverage_totals()
    assert totals["evaluator_only"] == 2
    assert totals["human_only"] == 4801 - 179 + 5
    expected = stats.spearmanr(used_x, used_y).statistic
    assert result.per_model.loc[(TASK, MODEL), "rho"] == pytest.approx(expected, abs=1e-12)
    assert result.per_model.loc[(TASK, MODEL), "n"] == 169
    # Every other cell has no scores: undefined, so the averages are too (and say why).
    assert math.isnan(result.average)
    assert len(result.undefined) == 28
    assert "0 paired" in result.undefined[0][2]
    assert "human-only 4627" in result.table()
    assert math.isnan(result.tasks[TASK])  # Glide's three task-mates have no scores
    omitted = meta_evaluate(load_scores(path), "SC", nan_policy="omit", round_to=None)
    assert omitted.tasks[TASK] == pytest.approx(math.tanh(expected))
    assert omitted.average == pytest.approx(math.tanh(math.tanh(expected)))
    # the published rounding: 4 decimals of the generator's rho, then of each average
    published = meta_evaluate(load_scores(path), "SC", nan_policy="omit")
    assert published.tasks[TASK] == round(math.tanh(round(expected, 4)), 4)
    # PQ only where dimensions carry it.
    pq = meta_evaluate(load_scores(path), "PQ").coverage.loc[(TASK, MODEL)]
    assert pq["used"] == 84 and pq["missing"] == 86 and pq["failed"] == 4


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"id": "a", "task": TASK, "status": "ok", "score": 0.1}, "model"),
        ({"task": TASK, "model": "m", "status": "ok"}, "id"),
        ({"id": "a", "task": TASK, "model": "m", "status": "ok", "score": "high"}, "number"),
    ],
)
def test_bad_records(record: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        records_to_frame([record])


def test_duplicate_keys_and_bad_json(tmp_path: Path) -> None:
    record = {"id": "a", "task": TASK, "model": "m", "status": "ok", "score": 0.1}
    # two ids naming one image of one run: ambiguous
    other = {**record, "id": "b", "metadata": {"uid": "a"}}
    with pytest.raises(InputError, match="share a"):
        records_to_frame([record, other])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record) + "\n{not json\n", encoding="utf-8")
    frame = load_scores(bad)  # the unreadable line is skipped, and named
    assert len(frame) == 1
    assert [s.split(":")[0] for s in frame.attrs["skipped_lines"]] == ["line 2"]
    incomplete = tmp_path / "incomplete.jsonl"
    incomplete.write_text('{"id": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"incomplete\.jsonl line 1: missing field"):
        load_scores(incomplete)
    with pytest.raises(InputError, match="cannot read"):
        load_scores(tmp_path / "absent.jsonl")
