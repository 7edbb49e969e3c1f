"""Correlation statistics against scipy, undefined cases, bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from cigeval.stats import bootstrap_ci, correlation, rowwise_correlation, undefined_reason

SCIPY = {
    "spearman": lambda x, y: stats.spearmanr(x, y).statistic,
    "pearson": lambda x, y: stats.pearsonr(x, y).statistic,
    "kendall": lambda x, y: stats.kendalltau(x, y).statistic,
}


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
@pytest.mark.parametrize("seed", range(5))
def test_correlation_matches_scipy_with_ties(method: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Human-like scores on a coarse grid (many ties) against judge scores on the 0-10 grid.
    x = rng.choice([0.0, 1 / 6, 1 / 3, 0.5, 2 / 3, 5 / 6, 1.0], size=60)
    y = np.clip(np.round(x * 10 + rng.normal(0, 3, size=60)), 0, 10) / 10
    assert correlation(x, y, method) == pytest.approx(SCIPY[method](x, y), abs=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
def test_rowwise_matches_scipy(method: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, size=(6, 25)).astype(float)
    y = rng.integers(0, 11, size=(6, 25)).astype(float)
    values = rowwise_correlation(x, y, method)  # type: ignore[arg-type]
    expected = [SCIPY[method](a, b) for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(values, expected, atol=1e-12)


def test_constant_side_is_undefined_and_reported() -> None:
    x = np.array([0.0, 0.5, 1.0, 0.5])
    flat = np.full(4, 0.7)
    assert math.isnan(correlation(x, flat))
    assert undefined_reason(x, flat) == "constant evaluator scores"
    assert undefined_reason(flat, x) == "constant human scores"
    assert undefined_reason(x[:2], x[:2]) == "only 2 paired sample(s)"
    assert undefined_reason(x, x) is None
    assert np.isnan(rowwise_correlation(np.array([x]), np.array([flat]))).all()


def test_unknown_method_and_length_mismatch() -> None:
    with pytest.raises(ValueError):
        correlation(np.arange(5.0), np.arange(5.0), "cosine")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        correlation(np.arange(5.0), np.arange(4.0))


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    low, high = bootstrap_ci(x, y, n_boot=400, seed=7)
    assert (low, high) == bootstrap_ci(x, y, n_boot=400, seed=7)
    assert (low, high) != bootstrap_ci(x, y, n_boot=400, seed=8)
    assert low < correlation(x, y) < high
    narrow = bootstrap_ci(x, y, n_boot=400, seed=7, level=0.5)
    assert low < narrow[0] < narrow[1] < high


def test_spearman_bootstrap_ranks_resamples_as_average_ranks_does() -> None:
    from cigeval.stats import _resampled_ranks, average_ranks, bootstrap_indices

    rng = np.random.default_rng(4)
    x = rng.choice([0.0, 0.25, 0.5, 1.0], size=70)  # many ties, as human ratings have
    y = np.clip(np.round(x * 10 + rng.normal(0, 2, size=70)), 0, 10)
    idx = bootstrap_indices(70, 300, np.random.default_rng(5))
    assert np.array_equal(_resampled_ranks(x, idx), average_ranks(x[idx]))
    general = rowwise_correlation(x[idx], y[idx])
    tail = np.quantile(general[np.isfinite(general)], [0.025, 0.975])
    assert bootstrap_ci(x, y, n_boot=300, seed=5) == (float(tail[0]), float(tail[1]))


def test_bootstrap_ci_of_undefined_correlation_is_nan() -> None:
    low, high = bootstrap_ci(np.arange(5.0), np.ones(5))
    assert math.isnan(low) and math.isnan(high)
