"""Combination rules and spread used by ensembles."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cigeval.errors import ConfigError
from cigeval.rules import combine, majority, spread, trimmed_mean


def test_rules_on_known_values():
    values = [2.0, 4.0, 9.0, 5.0, 5.0]
    assert combine(values, "mean") == pytest.approx(5.0)
    assert combine(values, "median") == 5.0
    assert combine(values, "min") == 2.0 and combine(values, "max") == 9.0
    assert trimmed_mean(values, 0.2) == pytest.approx((4 + 5 + 5) / 3)
    assert combine(values, "majority") == 5.0


def test_majority_snaps_to_the_grid_and_breaks_ties_towards_the_median_then_lower():
    assert majority([6.9, 7.2, 3.0]) == 7.0
    assert majority([2, 8]) == 2.0
    assert majority([1, 4, 5, 9]) == 4.0
    assert majority([0.61, 0.64, 0.2], grid=0.1) == pytest.approx(0.6)


def test_trimmed_mean_keeps_small_lists_whole_and_cuts_from_three():
    assert trimmed_mean([1.0, 9.0]) == 5.0
    assert trimmed_mean([1.0, 5.0, 9.5]) == 5.0


def test_unknown_rule_and_empty_input():
    with pytest.raises(ConfigError, match="unknown combine rule"):
        combine([1.0], "mode")
    with pytest.raises(ValueError):
        combine([], "mean")


def test_spread():
    result = spread([0.2, 0.3, 0.9], tolerance=0.1)
    assert result["range"] == pytest.approx(0.7)
    assert result["std"] == pytest.approx(statistics.pstdev([0.2, 0.3, 0.9]))
    assert result["agreement"] == pytest.approx(1 / 3)
    assert spread([0.5], tolerance=0.1)["agreement"] == 1.0


@given(
    st.lists(st.floats(0, 10), min_size=1, max_size=12),
    st.sampled_from(["mean", "median", "trimmed_mean", "min", "max", "majority"]),
)
def test_every_rule_stays_within_the_judgments(values, rule):
    result = combine(values, rule)
    assert min(values) - 0.5 - 1e-9 <= result <= max(values) + 0.5 + 1e-9
    if rule != "majority":
        assert min(values) - 1e-9 <= result <= max(values) + 1e-9
