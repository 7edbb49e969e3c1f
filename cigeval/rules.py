"""Named rules that reduce several numbers to one, and the spread of judgments: one copy each.

Two words use them, each for one job:

- *aggregate*: a sample's sub-scores into its score (:func:`aggregate`, rules
  :data:`AGGREGATE_RULES`; the paper's rule is ``min``, and ``min_tiebreak_mean`` is ``min``
  with its ties broken, see :func:`min_tiebreak_mean`);
- *combine*: several judges' scores of one thing into one (:func:`combine`, rules
  :data:`COMBINE_RULES`), in ensembles and in the meta-evaluation.

(Correlations are *averaged* over generators and tasks: that is :mod:`cigeval.meta.average`.)
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

from cigeval.errors import ConfigError

#: Rules that turn a sample's sub-scores into its score.
Aggregate = Literal["min", "mean", "median", "max", "min_tiebreak_mean"]
AGGREGATE_RULES: tuple[str, ...] = ("min", "mean", "median", "max", "min_tiebreak_mean")
#: Weight of the tie-break in :func:`min_tiebreak_mean`: small enough that a gap of 10 points
#: (the whole 0-10 scale) adds 0.1, less than any two distinct one-decimal minimums differ.
TIEBREAK_WEIGHT = 0.01
#: Rules that turn several judgments of one thing into one.
COMBINE_RULES: tuple[str, ...] = ("mean", "median", "trimmed_mean", "min", "max", "majority")


def trimmed_mean(values: Sequence[float], fraction: float = 0.2) -> float:
    """Mean after dropping ``fraction`` of the values at each end.

    From three values on at least one value is dropped at each end (and at least one kept);
    with fewer than three values this is the plain mean.
    """
    ordered = sorted(values)
    n = len(ordered)
    if n < 3:
        return sum(ordered) / n
    cut = min(max(1, math.floor(fraction * n)), (n - 1) // 2)
    kept = ordered[cut : n - cut]
    return sum(kept) / len(kept)


def majority(values: Sequence[float], grid: float = 1.0) -> float:
    """The most common value after snapping to a grid (``grid`` = 1 point on 0-10, 0.1 on 0-1).

    Ties go to the tied grid value closest to the median of the snapped values, the lower one
    when two are equally close: two judges who disagree give the lower score.
    """
    if grid <= 0:
        raise ConfigError("the majority grid step must be positive")
    snapped = [round(round(v / grid) * grid, 10) for v in values]
    counts = Counter(snapped)
    best = max(counts.values())
    centre = statistics.median(snapped)
    tied = [v for v, c in counts.items() if c == best]
    return float(min(tied, key=lambda v: (abs(v - centre), v)))


def min_tiebreak_mean(values: Sequence[float]) -> float:
    """The minimum, with ties broken by the mean of the other values.

    value = min + :data:`TIEBREAK_WEIGHT` * (mean of the others - min), where "the others" are
    the values without one occurrence of the minimum (a single value is its own result).

    The added term lies in [0, 0.01 * (max - min)], so the result stays between the minimum
    and the maximum, on the sub-scores' own scale. On the 0-10 scale it is at most 0.1, so two
    samples whose minimums differ by 0.1 or more are never put in the opposite order (whole,
    half and one-decimal scores keep the order ``min`` gives them); among samples with the same
    minimum, the one whose other sub-scores are higher on average ranks higher. A 6 with the
    others averaging 9 gives 6.03, i.e. ``score = 0.603``: the first decimal is the minimum.
    """
    if len(values) == 0:
        raise ValueError("no values to aggregate")
    ordered = sorted(values)
    lowest, others = ordered[0], ordered[1:]
    if not others:
        return float(lowest)
    return float(lowest + TIEBREAK_WEIGHT * (sum(others) / len(others) - lowest))


def _rule(rule: str, grid: float, trim: float) -> Callable[[Sequence[float]], float]:
    rules: dict[str, Callable[[Sequence[float]], float]] = {
        "mean": lambda v: sum(v) / len(v),
        "median": lambda v: float(statistics.median(v)),
        "trimmed_mean": lambda v: trimmed_mean(v, trim),
        "min": min,
        "max": max,
        "majority": lambda v: majority(v, grid),
    }
    try:
        return rules[rule]
    except KeyError:
        raise ConfigError(
            f"unknown combine rule {rule!r}; choose one of: {', '.join(COMBINE_RULES)}"
        ) from None


def combine(
    values: Sequence[float], rule: str = "mean", *, grid: float = 1.0, trim: float = 0.2
) -> float:
    """Combine several judgments with a named rule from :data:`COMBINE_RULES`.

    ``grid`` is the step of ``majority``; ``trim`` the fraction ``trimmed_mean`` cuts per end.
    """
    function = _rule(rule, grid, trim)
    if len(values) == 0:
        raise ValueError("nothing to combine")
    return float(function(values))


def aggregate(values: Sequence[float], rule: str = "min") -> float:
    """A sample's score from its sub-scores with a rule from :data:`AGGREGATE_RULES`."""
    if rule not in AGGREGATE_RULES:
        raise ConfigError(
            f"unknown aggregate {rule!r}; choose one of: {', '.join(AGGREGATE_RULES)}"
        )
    if len(values) == 0:
        raise ValueError("no sub-scores to aggregate")
    if rule == "min_tiebreak_mean":
        return min_tiebreak_mean(values)
    return combine(values, rule)


def spread(values: Sequence[float], tolerance: float) -> dict[str, float]:
    """How much the judgments disagree.

    ``std`` (population), ``range`` (max - min), and ``agreement``: the share of judgment pairs
    within ``tolerance`` of each other (1.0 = all agree; 1.0 for a single judgment).
    """
    n = len(values)
    if n == 0:
        return {"n": 0.0}
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    pairs = [(a, b) for i, a in enumerate(values) for b in values[i + 1 :]]
    agreement = (
        1.0 if not pairs else sum(abs(a - b) <= tolerance + 1e-12 for a, b in pairs) / len(pairs)
    )
    return {"n": float(n), "std": std, "range": max(values) - min(values), "agreement": agreement}
