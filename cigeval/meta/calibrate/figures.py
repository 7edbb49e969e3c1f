"""Held-out figures with percentile bootstrap intervals, resampled so that they stay honest.

Items of one prompt are not independent (one prompt's images share its difficulty), so every
item-level figure (an accuracy, a coverage, an error, a within-prompt agreement) is resampled
by prompt group: a resample draws groups with replacement and keeps all of a group's items.
A ranking figure (the meta-evaluation's average of per-cell correlations) resamples images
within each (task, generator) cell, as ``cigeval meta --bootstrap`` does. Figures compared
with each other are drawn from the same resamples, so a gain's interval is paired. A learned
step is kept only when its gain's interval lies above zero (:func:`gated_step`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from cigeval.calibration.file import StepReport
from cigeval.stats import percentile_interval, rowwise_correlation

#: Resamples behind every interval, and the intervals' level, unless told otherwise.
N_BOOT = 1000
LEVEL = 0.95


def figure(value: float | None, draws: np.ndarray | None, level: float = LEVEL) -> dict[str, Any]:
    """``{"value": v, "interval": [lo, hi]}`` (None where undefined)."""
    interval = None
    if draws is not None:
        low, high = percentile_interval(draws, level)
        if not math.isnan(low):
            interval = [low, high]
    ok = value is not None and math.isfinite(value)
    return {"value": float(value) if ok else None, "interval": interval}  # type: ignore[arg-type]


def paired_figures(
    values: Sequence[float] | np.ndarray, draws: np.ndarray, *, lower_is_better: bool = False
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The figures before and after a step (``values[0]`` and ``values[1]``, their paired
    bootstrap ``draws`` n_boot x 2; no draws: no intervals) and the step's gain: after minus
    before, or before minus after where lower is better (an error removed)."""
    has = len(draws) > 0
    before = figure(values[0], draws[:, 0] if has else None)
    after = figure(values[1], draws[:, 1] if has else None)
    if lower_is_better:
        gain = figure(values[0] - values[1], draws[:, 0] - draws[:, 1] if has else None)
    else:
        gain = figure(values[1] - values[0], draws[:, 1] - draws[:, 0] if has else None)
    return before, after, gain


def above_zero(fig: dict[str, Any]) -> bool:
    """Whether a gain's interval lies wholly above zero (a gain that excludes zero by
    lying below it is a loss, never kept)."""
    interval = fig.get("interval")
    return interval is not None and interval[0] > 0


def gated_step(
    step: str,
    what: str,
    figures: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
    *,
    measured: str,
    stock: str,
    chosen: dict[str, Any] | None = None,
) -> StepReport:
    """The report of a learned step, kept only when its held-out gain lies above zero
    (:func:`above_zero`): ``what`` names the figure, ``figures`` are it before and after the
    step and the gain (as :func:`paired_figures` makes them), ``measured`` says them in words,
    ``stock`` is what is kept instead of a rejected step; ``chosen`` what the train side
    chose."""
    before, after, gain = figures
    kept = above_zero(gain)
    if kept:
        reason = f"{measured} lies above zero"
    else:
        reason = f"{measured} does not lie above zero; {stock} kept"
    return StepReport(
        step=step,
        kept=kept,
        reason=reason,
        chosen=chosen or {},
        heldout={"figure": what, "before": before, "after": after, "gain": gain},
    )


def group_codes(groups: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, int]:
    """Each item's group as a number 0..G-1, and G."""
    _, codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
    return codes, int(codes.max()) + 1 if len(codes) else 0


def group_weights(n_groups: int, n_boot: int, seed: int) -> np.ndarray:
    """``n_boot`` resamples of groups as counts (n_boot x G), seeded."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_boot).astype(float)


def grouped_ratios(
    numerators: Sequence[np.ndarray],
    denominator: np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Ratios sum(numerator) / sum(denominator) over items, and their bootstrap draws
    (n_boot x len(numerators)), prompt groups resampled together."""
    codes, count = group_codes(groups)
    den = np.bincount(codes, weights=np.asarray(denominator, float), minlength=count)
    nums = np.column_stack(
        [np.bincount(codes, weights=np.asarray(n, float), minlength=count) for n in numerators]
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        values = nums.sum(axis=0) / den.sum()
        if n_boot <= 0 or count == 0:
            return values, np.full((0, len(numerators)), np.nan)
        weights = group_weights(count, n_boot, seed)
        draws = (weights @ nums) / (weights @ den)[:, None]
    return values, draws


def ranking_average(
    human: np.ndarray,
    scores: Sequence[np.ndarray],
    tasks: np.ndarray,
    cells: np.ndarray,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The meta-evaluation's average (Spearman per (task, cell), tanh of the mean over a
    task's cells, then over tasks: the published ``paper`` averaging, nothing rounded) of
    each score array against ``human``, and its paired bootstrap draws (n_boot x
    len(scores)): images resampled within each cell, the same draws for every array.

    Only items where ``human`` and every score array have a value count, so the arrays are
    compared on the same images. An undefined cell correlation is left out of its task.
    """
    complete = ~np.isnan(human)
    for score in scores:
        complete &= ~np.isnan(score)
    human, tasks, cells = human[complete], tasks[complete], cells[complete]
    scores = [score[complete] for score in scores]
    rng = np.random.default_rng(seed)
    keys = sorted({(str(t), str(c)) for t, c in zip(tasks, cells, strict=True)})
    task_list = sorted({k[0] for k in keys})
    points: dict[tuple[str, str], np.ndarray] = {}
    draws: dict[tuple[str, str], np.ndarray] = {}
    for key in keys:
        where = np.flatnonzero((tasks == key[0]) & (cells == key[1]))
        points[key] = np.full(len(scores), np.nan)
        draws[key] = np.full((max(n_boot, 0), len(scores)), np.nan)
        if len(where) < 3:
            continue
        idx = rng.integers(0, len(where), size=(n_boot, len(where))) if n_boot > 0 else None
        h = human[where]
        for m, score in enumerate(scores):
            s = score[where]
            points[key][m] = rowwise_correlation(h[None, :], s[None, :], "spearman")[0]
            if idx is not None:
                draws[key][:, m] = rowwise_correlation(h[idx], s[idx], "spearman")

    def average(values: dict[tuple[str, str], np.ndarray]) -> np.ndarray:
        by_task = [
            np.tanh(_nanmean(np.stack([values[k] for k in keys if k[0] == task]), axis=0))
            for task in task_list
        ]
        return np.tanh(_nanmean(np.stack(by_task), axis=0))

    if not keys:
        return np.full(len(scores), np.nan), np.full((0, len(scores)), np.nan)
    return average(points), average(draws) if n_boot > 0 else np.full((0, len(scores)), np.nan)


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    """The mean over ``axis`` without NaN (NaN where every value is NaN, without a warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)
