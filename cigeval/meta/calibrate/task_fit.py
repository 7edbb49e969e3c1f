"""Fitting one task's calibration on a train side: aggregation, jury, map, intervals, tie band.

Everything here sees train items only; the caller reports on held-out items through
:func:`predict`, which evaluates the stored functions (:mod:`cigeval.calibration.transforms`),
so the figures describe exactly what the file does.

- **aggregation** (per judge): the paper's ``min`` (the judge's own score), ``softmin`` at a
  few temperatures, or non-negative ``weighted`` sub-scores (least squares); the rule with
  the best within-cell Spearman on the train side wins (``weighted`` judged out of fold);
- **jury**: non-negative least-squares weights over the judges' aggregated scores (a
  missing judge stands in with its train mean);
- **map**: isotonic regression of the human label on the score (scikit-learn);
- **intervals**: conformalized quantile regression, cross-fitted on the train side: a low
  and a high quantile of the label as monotone functions of the score (gradient-boosted,
  monotone), widened by the conformal quantile of their out-of-fold misses, so that
  ``level`` of new labels fall inside. The quantile pair is the (1-level)/2 and (1+level)/2
  one or a narrower pair of :data:`INNER_QUANTILE_TAILS`, whichever gives the narrowest
  intervals out of fold once conformalized: human labels take few values (a mean of three
  raters' 0/0.5/1), so bounds at the outer quantiles sit on a value many labels share and
  cover far more than ``level``; a narrower pair, widened as much as its misses ask, keeps
  the coverage and loses the excess;
- **tie band**: the width under which two calibrated values of one prompt count as a tie,
  chosen for the best within-prompt win/tie/loss agreement of out-of-fold values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from cigeval.calibration.file import TaskCalibration
from cigeval.calibration.transforms import aggregate, combine_jury, interval_bounds, monotone_map
from cigeval.meta.calibrate._sklearn import sklearn_modules
from cigeval.meta.calibrate.splits import inner_folds
from cigeval.meta.calibrate.ties import choose_band, prompt_pairs
from cigeval.stats import rowwise_correlation

#: Softmin temperatures tried (on the [0, 1] scale of sub-scores).
SOFTMIN_TEMPERATURES = (0.05, 0.1, 0.2, 0.5)
#: Points on which the interval bounds are tabulated between the lowest and highest score.
INTERVAL_GRID = 400
#: Lower tail probabilities of the quantile pairs the intervals may start from, besides the
#: level's own (1-level)/2: the pair (t, 1-t) is conformalized like the level's.
INNER_QUANTILE_TAILS = (0.1, 0.15, 0.2)


@dataclass
class TaskData:
    """One task's items: each judge's sub-scores (n x k, on [0, 1], NaN where missing) and
    its own score (``stock``: n x judges, what the record or table says), the human label,
    the prompt group and the correlation cell (the generator) of each item."""

    task: str
    subs: list[np.ndarray]
    stock: np.ndarray
    human: np.ndarray
    groups: np.ndarray
    cells: np.ndarray

    def judges(self, which: tuple[int, ...]) -> TaskData:
        """The same items with only some judges, in the given order."""
        return replace(self, subs=[self.subs[j] for j in which], stock=self.stock[:, list(which)])


@dataclass(frozen=True)
class FitOptions:
    """Which steps a fit learns (the others keep the stock behaviour) and how."""

    aggregation: bool = True
    jury: bool = True
    map: bool = True
    intervals: bool = True
    tie_band: bool = True
    level: float = 0.9
    scale: tuple[float, float] = (0.0, 1.0)
    inner_k: int = 5
    seed: int = 0


@dataclass
class TaskFit:
    """A fitted task: the stored functions and what the train side chose."""

    calibration: TaskCalibration
    chosen: dict[str, Any] = field(default_factory=dict)


def cell_agreement(human: np.ndarray, score: np.ndarray, cells: np.ndarray) -> float:
    """Mean over cells of Spearman(human, score) (items with both values; cells with fewer
    than three or a constant side left out); NaN when no cell counts."""
    values = []
    for cell in np.unique(cells):
        ok = (cells == cell) & ~np.isnan(human) & ~np.isnan(score)
        if ok.sum() < 3 or np.ptp(human[ok]) == 0 or np.ptp(score[ok]) == 0:
            continue
        values.append(rowwise_correlation(human[ok][None, :], score[ok][None, :])[0])
    return float(np.mean(values)) if values else math.nan


def _judge_score(data: TaskData, j: int, rule: dict[str, Any], items: np.ndarray) -> np.ndarray:
    if rule["rule"] == "min":
        return data.stock[items, j]
    return aggregate(data.subs[j][items], rule)


def _weighted_rule(subs: np.ndarray, human: np.ndarray) -> dict[str, Any] | None:
    ok = ~np.isnan(subs).any(axis=1) & ~np.isnan(human)
    if ok.sum() < subs.shape[1] + 2:
        return None
    linear = sklearn_modules()["linear_model"]
    model = linear.LinearRegression(positive=True).fit(subs[ok], human[ok])
    return {
        "rule": "weighted",
        "weights": [float(w) for w in model.coef_],
        "intercept": float(model.intercept_),
    }


def _choose_rule(
    data: TaskData, j: int, train: np.ndarray, options: FitOptions
) -> tuple[dict[str, Any], dict[str, float]]:
    """The aggregation of judge ``j`` with the best within-cell Spearman on the train side."""
    human, cells = data.human[train], data.cells[train]
    tried: dict[str, float] = {"min": cell_agreement(human, data.stock[train, j], cells)}
    rules: dict[str, dict[str, Any]] = {"min": {"rule": "min"}}
    width = data.subs[j].shape[1]
    if options.aggregation and width >= 2:
        for t in SOFTMIN_TEMPERATURES:
            name = f"softmin({t:g})"
            rules[name] = {"rule": "softmin", "temperature": t}
            tried[name] = cell_agreement(human, aggregate(data.subs[j][train], rules[name]), cells)
        oof = np.full(len(train), np.nan)
        for fold in inner_folds(data.groups, train, options.inner_k, options.seed):
            inner = _weighted_rule(data.subs[j][fold.train], data.human[fold.train])
            if inner is not None:
                oof[np.searchsorted(train, fold.test)] = aggregate(data.subs[j][fold.test], inner)
        weighted = _weighted_rule(data.subs[j][train], human)
        if weighted is not None:
            rules["weighted"] = weighted
            tried["weighted (out of fold)"] = cell_agreement(human, oof, cells)
    best = max(tried, key=lambda k: -math.inf if math.isnan(tried[k]) else tried[k])
    key = "weighted" if best.startswith("weighted") else best
    return rules[key], {k: round(v, 4) for k, v in tried.items() if not math.isnan(v)}


def _point_fit(data: TaskData, train: np.ndarray, options: FitOptions) -> TaskFit:
    """Aggregation, jury and map on ``train`` (no intervals, no band)."""
    chosen: dict[str, Any] = {}
    rules: list[dict[str, Any]] = []
    for j in range(len(data.subs)):
        rule: dict[str, Any]
        if options.aggregation:
            rule, tried = _choose_rule(data, j, train, options)
            chosen.setdefault("aggregation", []).append(tried)
        else:
            rule = {"rule": "min"}
        rules.append(rule)
    jury = None
    if options.jury and len(rules) > 1:
        scores = np.column_stack([_judge_score(data, j, r, train) for j, r in enumerate(rules)])
        ok = ~np.isnan(scores).all(axis=1) & ~np.isnan(data.human[train])
        fill = [float(np.nanmean(c)) if (~np.isnan(c)).any() else 0.0 for c in scores[ok].T]
        filled = np.where(np.isnan(scores[ok]), np.asarray(fill)[None, :], scores[ok])
        linear = sklearn_modules()["linear_model"]
        model = linear.LinearRegression(positive=True).fit(filled, data.human[train][ok])
        weights = [float(w) for w in model.coef_]
        jury = {"weights": weights, "intercept": float(model.intercept_), "fill": fill}
        chosen["jury_weights"] = [round(w, 4) for w in weights]
    calibration = TaskCalibration(judges=rules, jury=jury, n_train=len(train))
    if options.map:
        score = pre_map(calibration, data, train)
        ok = ~np.isnan(score) & ~np.isnan(data.human[train])
        if len(np.unique(score[ok])) >= 2:
            isotonic = sklearn_modules()["isotonic"]
            low, high = options.scale
            model = isotonic.IsotonicRegression(out_of_bounds="clip", y_min=low, y_max=high)
            model.fit(score[ok], data.human[train][ok])
            calibration.map = {
                "x": [float(x) for x in model.X_thresholds_],
                "y": [float(y) for y in model.y_thresholds_],
            }
    return TaskFit(calibration, chosen)


def pre_map(calibration: TaskCalibration, data: TaskData, items: np.ndarray) -> np.ndarray:
    """The score the map and the interval read, for ``items`` (as the file computes it)."""
    scores = np.column_stack(
        [_judge_score(data, j, r, items) for j, r in enumerate(calibration.judges)]
    )
    if calibration.jury is None:
        return scores[:, 0]
    return combine_jury(scores, calibration.jury)


def predict(
    calibration: TaskCalibration, data: TaskData, items: np.ndarray, scale: tuple[float, float]
) -> dict[str, np.ndarray]:
    """Pre-map score ``s``, calibrated ``value`` and interval ``low``/``high`` of ``items``
    (NaN bounds without intervals)."""
    score = pre_map(calibration, data, items)
    value = np.clip(monotone_map(score, calibration.map), *scale)
    low = high = np.full(len(items), np.nan)
    if calibration.interval is not None:
        low, high = interval_bounds(score, calibration.interval, scale)
    return {"s": score, "value": value, "low": low, "high": high}


def _quantile_model(level: float, score: np.ndarray, human: np.ndarray, seed: int) -> Any:
    ensemble = sklearn_modules()["ensemble"]
    model = ensemble.HistGradientBoostingRegressor(
        loss="quantile",
        quantile=level,
        max_depth=2,
        max_iter=100,
        monotonic_cst=[1],
        random_state=seed,
    )
    return model.fit(score[:, None], human)


def conformal_quantile(misses: np.ndarray, level: float) -> float:
    """The split-conformal quantile: the ceil((n+1) level)-th smallest miss (inf when n is too
    small for the level)."""
    n = len(misses)
    rank = math.ceil((n + 1) * level)
    return math.inf if rank > n else float(np.sort(misses)[rank - 1])


def _intervals(
    data: TaskData, train: np.ndarray, options: FitOptions, fitted: TaskCalibration
) -> tuple[dict[str, list[float]] | None, np.ndarray, dict[str, Any]]:
    """Cross-fitted CQR bounds (the stored table), the out-of-fold calibrated values of the
    train items (for the tie band) and what was measured."""
    folds = inner_folds(data.groups, train, options.inner_k, options.seed)
    oof_s = np.full(len(train), np.nan)
    oof_v = np.full(len(train), np.nan)
    for fold in folds:
        inner = _point_fit(data, fold.train, options).calibration
        out = predict(inner, data, fold.test, options.scale)
        at = np.searchsorted(train, fold.test)
        oof_s[at], oof_v[at] = out["s"], out["value"]
    human = data.human[train]
    ok = ~np.isnan(oof_s) & ~np.isnan(human)
    if not options.intervals or ok.sum() < 10 or not folds:
        return None, oof_v, {}
    tails = sorted({(1 - options.level) / 2, *(t for t in INNER_QUANTILE_TAILS if t < 0.5)})
    tried = [_conformalized(tail, folds, train, oof_s, human, ok, options) for tail in tails]
    usable = [t for t in tried if math.isfinite(t[1])]
    if not usable:
        return None, oof_v, {"conformal": f"too few items ({int(ok.sum())})"}
    tail, widen, _ = min(usable, key=lambda t: (t[2], t[0]))
    low_q, high_q = tail, 1 - tail
    lower = _quantile_model(low_q, oof_s[ok], human[ok], options.seed)
    upper = _quantile_model(high_q, oof_s[ok], human[ok], options.seed)
    span = np.concatenate([oof_s[ok], pre_map(fitted, data, train)])
    span = span[~np.isnan(span)]
    grid = np.linspace(span.min(), span.max(), INTERVAL_GRID)
    low, high = lower.predict(grid[:, None]) - widen, upper.predict(grid[:, None]) + widen
    keep = np.ones(len(grid), dtype=bool)
    keep[1:] = (np.diff(low) != 0) | (np.diff(high) != 0)
    table = {
        "x": [float(x) for x in grid[keep]],
        "lower": [float(v) for v in low[keep]],
        "upper": [float(v) for v in high[keep]],
    }
    measured = {
        "conformal_widening": round(widen, 4),
        "quantiles": [round(low_q, 4), round(high_q, 4)],
        "out_of_fold_width": {f"{t:g}": round(w, 4) for t, _, w in tried if math.isfinite(w)},
        "misses": int(ok.sum()),
    }
    return table, oof_v, measured


def _conformalized(
    tail: float,
    folds: list[Any],
    train: np.ndarray,
    oof_s: np.ndarray,
    human: np.ndarray,
    ok: np.ndarray,
    options: FitOptions,
) -> tuple[float, float, float]:
    """The quantile pair (``tail``, 1 - ``tail``) cross-fitted on the train side: its
    conformal widening at the level and the mean width of the widened intervals out of fold
    (inf when too few items)."""
    misses = np.full(len(train), np.nan)
    lows = np.full(len(train), np.nan)
    highs = np.full(len(train), np.nan)
    for fold in folds:
        at_test = np.searchsorted(train, fold.test)
        fit_on = np.setdiff1d(np.flatnonzero(ok), at_test)
        target = at_test[ok[at_test]]
        if len(fit_on) < 5 or not len(target):
            continue
        lower = _quantile_model(tail, oof_s[fit_on], human[fit_on], options.seed)
        upper = _quantile_model(1 - tail, oof_s[fit_on], human[fit_on], options.seed)
        s = oof_s[target][:, None]
        lows[target], highs[target] = lower.predict(s), upper.predict(s)
        misses[target] = np.maximum(lows[target] - human[target], human[target] - highs[target])
    scored = ~np.isnan(misses)
    widen = conformal_quantile(misses[scored], options.level)
    if not math.isfinite(widen):
        return tail, math.inf, math.inf
    # the width as the file gives it: widened, then clipped to the label's scale
    low_end, high_end = options.scale
    low = np.clip(lows[scored] - widen, low_end, high_end)
    high = np.clip(highs[scored] + widen, low_end, high_end)
    return tail, widen, float(np.mean(np.maximum(high - low, 0.0)))


def fit_task(data: TaskData, train: np.ndarray, options: FitOptions) -> TaskFit:
    """The calibration of one task from its ``train`` items (see the module docstring)."""
    fit = _point_fit(data, train, options)
    if options.intervals or options.tie_band:
        table, oof_v, measured = _intervals(data, train, options, fit.calibration)
        fit.calibration.interval = table
        fit.chosen.update(measured)
        if options.tie_band:
            pairs = prompt_pairs(data.groups[train], data.cells[train])
            band, tried = choose_band(data.human[train], oof_v, pairs)
            fit.calibration.tie_band = band
            fit.chosen["tie_band"] = tried
    return fit
