"""The statistics cigeval's numbers share: correlations (Spearman, Pearson, Kendall),
average ranks, bootstrap resampling and percentile intervals. Meta-evaluation, the report
and the comparisons all compute through here.

Spearman and Pearson need numpy only (so a report never loads scipy); Kendall loads scipy on
first use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

Method = Literal["spearman", "pearson", "kendall"]
METHODS: tuple[str, ...] = ("spearman", "pearson", "kendall")

#: Fewer paired samples than this and a correlation is reported as undefined.
MIN_SAMPLES = 3


def undefined_reason(x: np.ndarray, y: np.ndarray, min_samples: int = MIN_SAMPLES) -> str | None:
    """Why a correlation of x and y is undefined (too few pairs, a constant side), or None."""
    if len(x) < min_samples:
        return f"only {len(x)} paired sample(s)"
    if np.ptp(x) == 0:
        return "constant human scores"
    if np.ptp(y) == 0:
        return "constant evaluator scores"
    return None


def correlation(
    x: np.ndarray, y: np.ndarray, method: Method = "spearman", min_samples: int = MIN_SAMPLES
) -> float:
    """The correlation of paired samples, or NaN when it is undefined (equal to scipy's
    ``spearmanr``/``pearsonr``/``kendalltau``; Spearman and Pearson without loading scipy).

    Undefined means fewer than ``min_samples`` pairs or a constant side (no ranking to agree
    with); callers report those cells rather than averaging over them silently.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"x and y differ in length: {x.shape} vs {y.shape}")
    if undefined_reason(x, y, min_samples) is not None:
        return math.nan
    if method == "kendall":
        from scipy import stats

        return float(stats.kendalltau(x, y).statistic)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    return float(rowwise_correlation(x[None, :], y[None, :], method)[0])


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    denom = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(axis=1) / denom
    r[denom == 0] = np.nan
    return np.clip(r, -1.0, 1.0)


def rowwise_correlation(x: np.ndarray, y: np.ndarray, method: Method = "spearman") -> np.ndarray:
    """Correlation of each row of x with the same row of y (2-D arrays); NaN where constant.

    Vectorised for Spearman (Pearson on average ranks) and Pearson; Kendall loops.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.atleast_2d(np.asarray(y, dtype=float))
    if method == "spearman":
        return _rowwise_pearson(average_ranks(x), average_ranks(y))
    if method == "pearson":
        return _rowwise_pearson(x, y)
    if method == "kendall":
        return np.array(
            [correlation(a, b, "kendall", min_samples=2) for a, b in zip(x, y, strict=True)]
        )
    raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")


def average_ranks(values: np.ndarray) -> np.ndarray:
    """The 1-based ranks of each row of a 2-D array, ties given the mean of their ranks (what
    ``scipy.stats.rankdata(values, axis=1)`` returns), with numpy alone."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, axis=1, kind="stable")
    ranked = np.take_along_axis(values, order, axis=1)
    rows, width = ranked.shape
    # Runs of equal values: each starts where the value changes along the sorted row.
    starts = np.ones((rows, width), dtype=bool)
    starts[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    run = np.cumsum(starts, axis=1) - 1  # index of each position's run within its row
    offsets = (np.arange(rows) * width)[:, None]
    run_ids = (run + offsets).ravel()
    positions = np.tile(np.arange(1, width + 1, dtype=float), rows)
    totals = np.bincount(run_ids, weights=positions, minlength=rows * width)
    counts = np.bincount(run_ids, minlength=rows * width)
    mean_rank = (totals[run_ids] / counts[run_ids]).reshape(rows, width)
    ranks = np.empty_like(mean_rank)
    np.put_along_axis(ranks, order, mean_rank, axis=1)
    return ranks


def bootstrap_indices(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` resamples (rows) of ``n`` indices drawn with replacement."""
    return rng.integers(0, n, size=(n_boot, n))


def bootstrap_ci(
    x: np.ndarray,
    y: np.ndarray,
    method: Method = "spearman",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of one correlation (pairs resampled together).

    Resamples whose correlation is undefined (e.g. all-equal draws) are left out; the result
    is (nan, nan) when the correlation itself is undefined.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if math.isnan(correlation(x, y, method)):
        return math.nan, math.nan
    idx = bootstrap_indices(len(x), n_boot, np.random.default_rng(seed))
    if method == "spearman" and np.isfinite(x).all() and np.isfinite(y).all():
        values = _rowwise_pearson(_resampled_ranks(x, idx), _resampled_ranks(y, idx))
    else:
        values = rowwise_correlation(x[idx], y[idx], method)
    return percentile_interval(values, level)


def _resampled_ranks(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``average_ranks(x[idx])`` (the same numbers) without sorting each resample: a value's
    average rank is how many smaller values the resample drew plus (its copies + 1) / 2."""
    distinct, group = np.unique(x, return_inverse=True)
    rows, k = idx.shape[0], len(distinct)
    drawn = group[idx]
    counts = np.bincount((drawn + (np.arange(rows) * k)[:, None]).ravel(), minlength=rows * k)
    counts = counts.reshape(rows, k)
    return np.take_along_axis(np.cumsum(counts, axis=1) - (counts - 1) / 2, drawn, axis=1)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` interval of the finite values (nan, nan when there are none)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


#: Resamples of a mean are drawn in blocks of this many, so a large group needs no huge matrix.
_BLOCK = 256
#: Values with at most 1/this many distinct values are resampled as counts of each.
_COUNTS_FROM = 4


def bootstrap_mean_interval(
    values: Sequence[float], n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (deterministic for a seed).

    One value gives the degenerate interval (v, v); none gives (nan, nan).
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return math.nan, math.nan
    if data.size == 1:
        return float(data[0]), float(data[0])
    if n_boot <= 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    distinct, counts = np.unique(data, return_counts=True)
    if distinct.size * _COUNTS_FROM <= data.size:
        # a resample's mean depends only on how many copies of each distinct value it drew,
        # a multinomial draw: k numbers per resample instead of n (a 0-10 scale has k = 11)
        drawn = rng.multinomial(data.size, counts / data.size, size=n_boot)
        return percentile_interval(drawn @ distinct / data.size, level)
    means = np.empty(n_boot)
    for start in range(0, n_boot, _BLOCK):
        count = min(_BLOCK, n_boot - start)
        means[start : start + count] = data[bootstrap_indices(data.size, count, rng)].mean(axis=1)
    return percentile_interval(means, level)
