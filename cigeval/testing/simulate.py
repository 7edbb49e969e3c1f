"""Seeded simulations of paired generator scores with a known true difference, run through
cigeval's own comparison statistics (used by the tests and by benchmarks/compare_simulations.py).

Two kinds of data: ``continuous`` (condition difficulty shared by both generators plus
independent noise; the true mean difference is ``delta``) and ``discrete`` (a judge's 0-10
scores / 10: a latent quality per condition, rounded and clipped, so many pairs tie; the true
mean difference is computed from two million draws).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cigeval.comparisons.paired import paired_difference
from cigeval.stats import bootstrap_mean_interval


def continuous_pairs(
    rng: np.random.Generator, n: int, delta: float, spread: float = 0.25, noise: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """(generator, baseline) scores of ``n`` conditions; E[generator - baseline] = delta."""
    difficulty = rng.normal(0.5, spread, n)
    return difficulty + delta + rng.normal(0, noise, n), difficulty + rng.normal(0, noise, n)


def discrete_pairs(rng: np.random.Generator, n: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """(generator, baseline) scores on the 0-10 grid / 10; the generator's latent quality is
    ``shift`` higher."""
    quality = rng.beta(2.0, 2.0, n)

    def judge(offset: float) -> np.ndarray:
        return np.clip(np.round(10 * (quality + offset + rng.normal(0, 0.12, n))), 0, 10) / 10

    return judge(shift), judge(0.0)


def true_discrete_difference(shift: float) -> float:
    """E[generator - baseline] of :func:`discrete_pairs`, from two million draws."""
    g, b = discrete_pairs(np.random.default_rng(12345), 2_000_000, shift)
    return float(np.mean(g - b))


@dataclass
class Rates:
    """Over ``sims`` simulated experiments: how often the paired interval covered the true
    difference, excluded zero, the signed-rank test rejected at 5%, and the two generators'
    independent intervals overlapped."""

    sims: int
    coverage: float
    interval_excludes_zero: float
    test_rejects: float
    independent_overlap: float


def simulate(
    kind: str, n: int, delta: float, sims: int, seed: int, n_boot: int = 1000, independent=False
) -> Rates:
    """Run ``sims`` experiments of ``n`` pairs and count (see :class:`Rates`)."""
    rng = np.random.default_rng(seed)
    truth = delta if kind == "continuous" else true_discrete_difference(delta)
    covered = excluded = rejected = overlapped = 0
    for index in range(sims):
        if kind == "continuous":
            g, b = continuous_pairs(rng, n, delta)
        else:
            g, b = discrete_pairs(rng, n, delta)
        row = paired_difference(
            list(zip(g.tolist(), b.tolist(), strict=True)),
            judge="j", generator="g", baseline="b", n_boot=n_boot, seed=index,
        )  # fmt: skip
        assert row.low is not None and row.high is not None and row.p_value is not None
        covered += row.low <= truth <= row.high
        excluded += row.interval_excludes_zero
        rejected += row.p_value < 0.05
        if independent:
            g_low, g_high = bootstrap_mean_interval(g.tolist(), n_boot, seed=index)
            b_low, b_high = bootstrap_mean_interval(b.tolist(), n_boot, seed=index)
            overlapped += g_low <= b_high and b_low <= g_high
    return Rates(sims, covered / sims, excluded / sims, rejected / sims, overlapped / sims)
