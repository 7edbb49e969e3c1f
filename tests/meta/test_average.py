"""The two averaging modes on hand-made numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cigeval.meta.average import average_correlations, average_tasks


def _per_model(values: dict[tuple[str, str], float]) -> pd.Series:
    index = pd.MultiIndex.from_tuples(list(values), names=["task", "model"])
    return pd.Series(list(values.values()), index=index)


def test_paper_is_tanh_of_mean_raw_rho() -> None:
    assert average_correlations([0.5, 0.5], "paper") == pytest.approx(math.tanh(0.5))
    assert average_correlations([0.2, 0.8], "paper") == pytest.approx(math.tanh(0.5))


def test_fisher_z_is_arctanh_mean_tanh() -> None:
    # Equal correlations average to themselves; unequal ones lie above the raw mean.
    assert average_correlations([0.5, 0.5], "fisher_z") == pytest.approx(0.5)
    expected = math.tanh((math.atanh(0.2) + math.atanh(0.8)) / 2)
    assert average_correlations([0.2, 0.8], "fisher_z") == pytest.approx(expected)
    assert expected > 0.5 > average_correlations([0.2, 0.8], "paper")


def test_fisher_z_survives_perfect_correlation() -> None:
    value = average_correlations([1.0, 1.0], "fisher_z")
    assert value == pytest.approx(1.0, abs=1e-6) and math.isfinite(value)


def test_nan_propagates_or_is_omitted() -> None:
    assert math.isnan(average_correlations([0.3, float("nan")], "paper"))
    assert average_correlations([0.3, float("nan")], "paper", "omit") == pytest.approx(
        math.tanh(0.3)
    )
    assert math.isnan(average_correlations([float("nan")], "paper", "omit"))
    assert math.isnan(average_correlations([], "fisher_z"))


def test_average_tasks_two_levels_and_order() -> None:
    per_model = _per_model({("b", "m1"): 0.4, ("b", "m2"): 0.6, ("a", "m1"): 0.2})
    tasks, average = average_tasks(per_model, "paper", task_order=["a", "b"])
    assert list(tasks) == ["a", "b"]
    assert tasks["a"] == pytest.approx(np.tanh(0.2))
    assert tasks["b"] == pytest.approx(np.tanh(0.5))
    assert average == pytest.approx(np.tanh((np.tanh(0.2) + np.tanh(0.5)) / 2))
    z_tasks, z_average = average_tasks(per_model, "fisher_z", task_order=["a", "b"])
    assert z_tasks["a"] == pytest.approx(0.2)
    assert z_average > average


def test_rounding_applies_before_each_average() -> None:
    per_model = _per_model({("a", "m1"): 0.123449, ("a", "m2"): 0.123449})
    tasks, average = average_tasks(per_model, "paper", round_to=4)
    assert tasks["a"] == round(math.tanh(0.1234), 4)
    assert average == round(math.tanh(tasks["a"]), 4)
    unrounded, _ = average_tasks(per_model, "paper")
    assert unrounded["a"] != tasks["a"]


def test_unknown_mode() -> None:
    with pytest.raises(ValueError):
        average_correlations([0.1], "median")  # type: ignore[arg-type]
