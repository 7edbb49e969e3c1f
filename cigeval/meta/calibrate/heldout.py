"""The held-out figures of a score calibration, each with its bootstrap interval.

- ``coverage`` (and ``coverage_by_task``): the share of held-out human labels inside their
  calibrated interval (nominal: the level, 0.9 by default); ``width``: the mean width;
- ``best_single`` / ``calibrated``: the ranking agreement (the meta-evaluation's average of
  within-cell Spearman correlations) of the best single judge as it scores, and of the
  calibrated values; ``gain_interval``: their paired difference's interval;
- ``wtl_before`` / ``wtl_after``: the within-prompt win/tie/loss agreement of the first
  judge as it scores (ties only when equal) and after its calibration (with the tie band).

``intervals`` holds the interval of every figure, keyed by the figure's name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cigeval.meta.calibrate.figures import figure, grouped_ratios, paired_figures
from cigeval.meta.calibrate.pipeline import Outcome, ScoreCalibrator


def _ratio(
    cal: ScoreCalibrator, numerator: np.ndarray, counted: np.ndarray, groups: np.ndarray
) -> dict[str, Any]:
    values, draws = grouped_ratios(
        [np.where(counted > 0, numerator, 0.0)], counted, groups, cal.n_boot, cal.options.seed
    )
    return figure(values[0], draws[:, 0] if len(draws) else None)


def heldout_figures(cal: ScoreCalibrator, outcome: Outcome) -> dict[str, Any]:
    """The figures of the module docstring (values as fractions, intervals beside them)."""
    items, held, got = cal.items, cal.held, outcome.predictions
    human = items.human[held]
    low, high = got.low[held], got.high[held]
    has = (~np.isnan(low) & ~np.isnan(human)).astype(float)
    inside = ((human >= low - 1e-9) & (human <= high + 1e-9)).astype(float)
    groups, tasks = items.groups[held], items.tasks[held]
    intervals: dict[str, Any] = {}
    coverage = _ratio(cal, inside, has, groups)
    by_task = {}
    intervals["coverage_by_task"] = {}
    for task in sorted(set(tasks.tolist())):
        mask = (tasks == task).astype(float) * has
        fig = _ratio(cal, inside, mask, groups)
        by_task[task] = fig["value"]
        intervals["coverage_by_task"][task] = fig["interval"]
    width = _ratio(cal, np.nan_to_num(high - low), has, groups)
    before, after, gain = cal._ranking_gain(outcome.stock_best, got.value)
    first, banded = cal.first_judge_wtl(outcome)
    agree0, counted, pair_groups = cal.wtl(items.stock[:, 0], 0.0)
    agree1, counted1, _ = cal.wtl(first.value, first.band if banded else 0.0)
    both = counted * counted1
    wtl_values, wtl_draws = grouped_ratios(
        [agree0 * both, agree1 * both], both, pair_groups, cal.n_boot, cal.options.seed
    )
    wtl_before, wtl_after, wtl_gain = paired_figures(wtl_values, wtl_draws)
    for name, fig in (
        ("coverage", coverage),
        ("width", width),
        ("best_single", before),
        ("calibrated", after),
        ("gain", gain),
        ("wtl_before", wtl_before),
        ("wtl_after", wtl_after),
        ("wtl_gain", wtl_gain),
    ):
        intervals[name] = fig["interval"]
    return {
        "items": len(held),
        "pairs": int(both.sum()),
        "level": cal.options.level,
        "coverage": coverage["value"],
        "coverage_by_task": by_task,
        "width": width["value"],
        "best_single": before["value"],
        "calibrated": after["value"],
        "gain": gain["value"],
        "gain_interval": gain["interval"],
        "wtl_before": wtl_before["value"],
        "wtl_after": wtl_after["value"],
        "intervals": intervals,
    }
