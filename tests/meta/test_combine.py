"""Combination rules and missing judgments when several score sources are combined."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cigeval.errors import ConfigError, InputError
from cigeval.meta import combine_scores, meta_evaluate, records_to_frame
from cigeval.rules import combine, majority, trimmed_mean


def _frame(scores: dict[str, float | None], failed: tuple[str, ...] = ()) -> pd.DataFrame:
    records = [
        {
            "id": uid,
            "task": "mask_guided_ie",
            "model": "Glide",
            "status": "error" if uid in failed else "ok",
            "score": value,
        }
        for uid, value in scores.items()
    ]
    return records_to_frame(records)


@pytest.mark.parametrize(
    ("rule", "values", "expected"),
    [
        ("mean", [0.2, 0.4, 0.9], 0.5),
        ("median", [0.2, 0.4, 0.9], 0.4),
        ("min", [0.2, 0.4, 0.9], 0.2),
        ("max", [0.2, 0.4, 0.9], 0.9),
        ("trimmed_mean", [0.2, 0.4, 0.9], 0.4),
        ("trimmed_mean", [0.0, 0.3, 0.5, 1.0], 0.4),
        ("trimmed_mean", [0.2, 0.6], 0.4),
        ("majority", [0.7, 0.7, 0.2], 0.7),
        ("majority", [0.69, 0.71, 0.2], 0.7),
        ("majority", [0.2, 0.8], 0.2),
        ("majority", [0.1, 0.5, 0.9], 0.5),
    ],
)
def test_rules(rule: str, values: list[float], expected: float) -> None:
    assert combine(values, rule, grid=0.1) == pytest.approx(expected)


def test_trimmed_mean_and_majority_options() -> None:
    values = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0])
    assert trimmed_mean(list(values), 0.2) == pytest.approx(np.mean(values[2:8]))
    assert majority([0.4, 0.6, 1.0], grid=0.5) == 0.5
    with pytest.raises(ConfigError):
        majority([0.5], grid=0)
    with pytest.raises(ConfigError, match="unknown combine rule"):
        combine([0.5], "vote")
    with pytest.raises(ConfigError, match="unknown combine rule"):
        combine_scores([_frame({"u1": 0.5})], "vote")


def test_combine_keeps_only_images_all_sources_scored() -> None:
    a = _frame({"u1": 0.2, "u2": 0.4, "u3": 0.6, "u4": 0.8})
    b = _frame({"u1": 0.4, "u2": None, "u3": 0.2, "u5": 1.0}, failed=("u3",))
    combined = combine_scores([a, b], "mean")
    sc = combined["SC"]
    key = ("mask_guided_ie", "Glide")
    assert sc.loc[(*key, "u1")] == pytest.approx(0.3)
    assert math.isnan(sc.loc[(*key, "u2")])  # b has no value
    assert math.isnan(sc.loc[(*key, "u3")]) and combined.loc[(*key, "u3"), "failed"]
    assert math.isnan(sc.loc[(*key, "u4")]) and combined.loc[(*key, "u4"), "n_sources"] == 1
    assert math.isnan(sc.loc[(*key, "u5")])
    assert combined.attrs["sources"] == 2


def test_combined_coverage_reports_partial_images() -> None:
    from cigeval.meta import load_human_ratings

    uids = sorted(load_human_ratings().loc[("mask_guided_ie", "Glide")].index)
    a = _frame({u: (i % 7) / 7 for i, u in enumerate(uids)})
    b = _frame({u: (i % 5) / 5 for i, u in enumerate(uids[:150])})
    result = meta_evaluate(combine_scores([a, b], "median"), nan_policy="omit")
    cell = result.coverage.loc[("mask_guided_ie", "Glide")]
    assert cell["used"] == 150 and cell["missing"] == 29 and cell["partial"] == 29
    assert "scored by only some sources" in result.coverage_line()


def test_single_source_combination_is_identity() -> None:
    a = _frame({"u1": 0.2, "u2": None})
    combined = combine_scores([a], "majority")
    assert combined.loc[("mask_guided_ie", "Glide", "u1"), "SC"] == pytest.approx(0.2)
    with pytest.raises(InputError):
        combine_scores([], "mean")
