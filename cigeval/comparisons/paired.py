"""Paired statistics of two generators on the conditions both answered.

The unit is the condition: each pair is (generator's score, baseline's score) on one prompt.
The interval is a percentile bootstrap of the mean difference that resamples conditions (the
pairs stay together), the test Wilcoxon's signed-rank test (scipy), and several generators
against one baseline are corrected with Holm's step-down method. numpy and scipy load on use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Two scores closer than this are a tie (scores live on [0, 1]; judges give discrete values).
TIE_TOLERANCE = 1e-9
#: With fewer non-tied pairs than this, no two-sided signed-rank p-value can fall below 0.05.
MIN_PAIRS_FOR_5_PERCENT = 6
#: The label of the row over every task.
ALL_TASKS = "all tasks"


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def paired_interval(
    differences: Sequence[float], n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean of paired ``differences`` (conditions
    resampled with replacement, ``n_boot`` times, vectorised in numpy; fixed by ``seed``)."""
    from cigeval.stats import bootstrap_mean_interval

    low, high = bootstrap_mean_interval(differences, n_boot, level, seed)
    return _finite(low), _finite(high)


def signed_rank_p(differences: Sequence[float]) -> float | None:
    """Two-sided p-value of Wilcoxon's signed-rank test that the differences are centred on
    zero (tied pairs dropped, scipy's default); 1.0 when every pair is tied, None when there
    is no pair."""
    import numpy as np
    from scipy import stats

    data = np.asarray(differences, dtype=float)
    if data.size == 0:
        return None
    data = np.where(np.abs(data) <= TIE_TOLERANCE, 0.0, data)
    if not np.any(data):
        return 1.0
    return float(stats.wilcoxon(data, zero_method="wilcox", alternative="two-sided").pvalue)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (the family is the values given; None stays None).

    The k-th smallest of m p-values is multiplied by m - k + 1, the running maximum is taken
    so the order is kept, and values are capped at 1.
    """
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def wins_ties_losses(differences: Sequence[float]) -> tuple[int, int, int]:
    """How many pairs the generator scored higher, the same (within :data:`TIE_TOLERANCE`),
    and lower than the baseline."""
    wins = sum(1 for d in differences if d > TIE_TOLERANCE)
    losses = sum(1 for d in differences if d < -TIE_TOLERANCE)
    return wins, len(differences) - wins - losses, losses


@dataclass
class PairedDifference:
    """One generator against the baseline under one judge, over one task or all of them.

    ``mean_difference`` is the mean of (generator - baseline) over the ``n`` conditions both
    answered, with its paired bootstrap interval [``low``, ``high``]; ``p_value`` is Wilcoxon's
    signed-rank test, ``p_holm`` the same after Holm's correction across the generators
    compared with the baseline (same judge, same task scope). ``only_generator`` and
    ``only_baseline`` count conditions that one side answered alone (not in the pairs).
    """

    judge: str
    generator: str
    baseline: str
    task: str
    n: int
    mean_generator: float | None
    mean_baseline: float | None
    mean_difference: float | None
    low: float | None
    high: float | None
    wins: int
    ties: int
    losses: int
    p_value: float | None
    p_holm: float | None = None
    only_generator: int = 0
    only_baseline: int = 0
    note: str | None = None

    @property
    def win_rate(self) -> float | None:
        """Wins over pairs (ties count half), or None with no pair."""
        return None if self.n == 0 else (self.wins + 0.5 * self.ties) / self.n

    @property
    def interval_excludes_zero(self) -> bool:
        """True when the paired interval lies wholly above or below zero."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "judge": self.judge,
            "generator": self.generator,
            "baseline": self.baseline,
            "task": self.task,
            "n": self.n,
            "mean_generator": self.mean_generator,
            "mean_baseline": self.mean_baseline,
            "mean_difference": self.mean_difference,
            "low": self.low,
            "high": self.high,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "win_rate": self.win_rate,
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "only_generator": self.only_generator,
            "only_baseline": self.only_baseline,
            "note": self.note,
        }


def paired_difference(
    pairs: Sequence[tuple[float, float]],
    *,
    judge: str,
    generator: str,
    baseline: str,
    task: str = ALL_TASKS,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """The :class:`PairedDifference` of (generator score, baseline score) ``pairs``."""
    if not pairs:
        return PairedDifference(
            judge, generator, baseline, task, 0, None, None, None, None, None, 0, 0, 0, None,
            note="no condition answered by both",
        )  # fmt: skip
    differences = [g - b for g, b in pairs]
    low, high = paired_interval(differences, n_boot, level, seed)
    wins, ties, losses = wins_ties_losses(differences)
    note = None
    if wins + losses < MIN_PAIRS_FOR_5_PERCENT:
        note = f"only {wins + losses} untied pair(s): the signed-rank test cannot reach p < 0.05"
    n = len(pairs)
    return PairedDifference(
        judge=judge,
        generator=generator,
        baseline=baseline,
        task=task,
        n=n,
        mean_generator=sum(g for g, _ in pairs) / n,
        mean_baseline=sum(b for _, b in pairs) / n,
        mean_difference=sum(differences) / n,
        low=low,
        high=high,
        wins=wins,
        ties=ties,
        losses=losses,
        p_value=signed_rank_p(differences),
        note=note,
    )
