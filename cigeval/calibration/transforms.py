"""The learned functions of a calibration file, evaluated with numpy only.

Each function reads the JSON form the file stores (lists of numbers), so applying a
calibration needs neither scikit-learn nor pandas, and the held-out figures of
``cigeval calibrate`` are computed through these same functions: what the file says it does
is what it was measured doing.

- *aggregation* of one judge's sub-scores (each on [0, 1]): ``min`` (the paper's rule),
  ``softmin`` with a temperature (min as it tends to 0, the mean as it grows), or
  ``weighted`` (non-negative weights and an intercept);
- a *jury*: non-negative weights over several judges' aggregated scores, a judge without a
  score standing in with its ``fill`` value;
- a *monotone map* to the human scale: piecewise linear through the isotonic fit's knots,
  flat beyond them (what scikit-learn's ``IsotonicRegression.predict`` computes);
- *interval bounds*: step functions of the pre-map score;
- a *four-way decision* from several judges' pairwise votes: a multinomial linear model over
  one-hot votes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: The aggregation rules a calibration may learn for one judge's sub-scores.
AGGREGATION_RULES = ("min", "softmin", "weighted")


def softmin(values: np.ndarray, temperature: float) -> np.ndarray:
    """Row-wise ``-t * log(mean(exp(-v / t)))``: the minimum as ``t`` tends to 0, the mean as
    it grows; NaN entries are left out of their row (a row of NaN gives NaN)."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    present = ~np.isnan(values)
    count = present.sum(axis=1)
    scaled = np.where(present, -values / temperature, -np.inf)
    top = np.max(scaled, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.log(np.exp(scaled - top).sum(axis=1)) + top[:, 0]
        result = -temperature * (total - np.log(count))
    return np.where(count > 0, result, np.nan)


def aggregate(values: np.ndarray, rule: Mapping[str, Any]) -> np.ndarray:
    """One score per row of sub-scores (n x k, on [0, 1]) under a stored rule.

    ``{"rule": "min"}``, ``{"rule": "softmin", "temperature": t}`` or ``{"rule": "weighted",
    "weights": [...], "intercept": b}``. ``min`` and ``softmin`` leave missing sub-scores out;
    ``weighted`` needs every one (NaN otherwise) and exactly as many as it has weights.
    """
    values = np.atleast_2d(np.asarray(values, dtype=float))
    name = rule.get("rule")
    if name == "min":
        with np.errstate(all="ignore"):
            present = ~np.isnan(values).all(axis=1)
            out = np.full(len(values), np.nan)
            out[present] = np.nanmin(values[present], axis=1)
        return out
    if name == "softmin":
        return softmin(values, float(rule["temperature"]))
    if name == "weighted":
        weights = np.asarray(rule["weights"], dtype=float)
        if values.shape[1] != len(weights):
            return np.full(len(values), np.nan)
        return values @ weights + float(rule.get("intercept", 0.0))
    raise ValueError(f"unknown aggregation rule {name!r}; one of {', '.join(AGGREGATION_RULES)}")


def combine_jury(scores: np.ndarray, jury: Mapping[str, Any]) -> np.ndarray:
    """The jury's score of each row of judges' scores (n x judges): ``fill`` stands in for
    a missing judge; a row with no judge at all gives NaN."""
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    fill = np.asarray(jury["fill"], dtype=float)
    weights = np.asarray(jury["weights"], dtype=float)
    none = np.isnan(scores).all(axis=1)
    filled = np.where(np.isnan(scores), fill[None, :], scores)
    out = filled @ weights + float(jury.get("intercept", 0.0))
    return np.where(none, np.nan, out)


def monotone_map(score: np.ndarray, table: Mapping[str, Sequence[float]] | None) -> np.ndarray:
    """The map of ``table`` (``x``, ``y`` knots, x increasing) at ``score``; identity when
    the table is None."""
    score = np.asarray(score, dtype=float)
    if table is None:
        return score.copy()
    return np.interp(score, np.asarray(table["x"], float), np.asarray(table["y"], float))


def step_lookup(score: np.ndarray, xs: Sequence[float], ys: Sequence[float]) -> np.ndarray:
    """A right-continuous step function: the ``ys`` of the last ``xs`` at or below ``score``
    (the first value below ``xs[0]``); NaN where ``score`` is NaN."""
    score = np.asarray(score, dtype=float)
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    at = np.clip(np.searchsorted(x, np.nan_to_num(score), side="right") - 1, 0, len(x) - 1)
    return np.where(np.isnan(score), np.nan, y[at])


def interval_bounds(
    score: np.ndarray, table: Mapping[str, Sequence[float]], scale: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper interval bounds at each pre-map ``score``, clipped to ``scale``."""
    low = step_lookup(score, table["x"], table["lower"])
    high = step_lookup(score, table["x"], table["upper"])
    lo, hi = float(scale[0]), float(scale[1])
    return np.clip(low, lo, hi), np.clip(high, lo, hi)


def vote_features(
    votes: Sequence[Mapping[str, str | None]], judges: Sequence[str], labels: Sequence[str]
) -> np.ndarray:
    """One-hot votes: for each judge, one column per label and one for "no usable vote"."""
    width = len(labels) + 1
    out = np.zeros((len(votes), len(judges) * width))
    index = {label: i for i, label in enumerate(labels)}
    for row, item in enumerate(votes):
        for j, judge in enumerate(judges):
            vote = item.get(judge)
            column = index.get(vote, len(labels)) if vote is not None else len(labels)
            out[row, j * width + column] = 1.0
    return out


def decide_votes(features: np.ndarray, model: Mapping[str, Any]) -> list[str]:
    """The label the multinomial model gives each row of one-hot votes."""
    coef = np.asarray(model["coef"], dtype=float)
    intercept = np.asarray(model["intercept"], dtype=float)
    logits = features @ coef.T + intercept
    labels = list(model["classes"])
    return [labels[i] for i in np.argmax(logits, axis=1)]
