"""How often a judge's preferences agree with the human's, counted as the benchmarks count.

- **accuracy with ties** (GenAI-Bench): every comparison with a human label counts; the judge
  is right when it names the same candidate, or a tie when the human tied. A plain ``tie``
  matches either kind of tie; ``both_good`` and ``both_bad`` do not match each other. A
  comparison the judge gave no usable answer to counts as wrong.
- **accuracy without ties** (MMRB2, and EditReward's "without ties"): comparisons the human
  tied are left out; a judge's tie counts as wrong.
- **per-order accuracy** (MMRB2 as published): each presentation order's answer counts on
  its own (both orders of a pair are two judgements), human ties left out, orders without an
  answer left out. Only for layouts that keep the per-order answers.
- **group accuracy** (EditReward-Bench, K = 2, 3, 4): a group of K candidates counts as right
  only when all its K(K-1)/2 comparisons are right; a group with a comparison missing counts
  as wrong.

Intervals: percentile bootstrap over items (a group's comparisons are resampled together),
vectorised in numpy, fixed by the seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cigeval.meta.preferences.items import PreferenceItem
from cigeval.ranking import TIE, TIE_KINDS

#: The label of the row over all tasks.
ALL_TASKS = "all tasks"
#: Bootstrap resamples drawn at once (bounds the memory of the weights matrix).
_BLOCK = 500


def agrees(human: str | None, judge: str | None) -> bool:
    """True when the judge's verdict on a comparison matches the human's (ties by kind)."""
    if human is None or judge is None:
        return False
    if human in TIE_KINDS:
        return judge in TIE_KINDS and (TIE in (human, judge) or judge == human)
    return judge == human


@dataclass
class Rate:
    """A proportion over items with its bootstrap interval (None where nothing counted)."""

    correct: float
    total: float
    value: float | None
    low: float | None = None
    high: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "correct": self.correct,
            "total": self.total,
            "value": self.value,
            "low": self.low,
            "high": self.high,
        }


@dataclass
class PreferenceRow:
    """The agreement on one task (or over all of them)."""

    task: str
    items: int
    comparisons: int
    with_ties: Rate
    without_ties: Rate
    per_order: Rate
    groups: dict[int, Rate] = field(default_factory=dict)
    inconsistent: Rate | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "task": self.task,
            "items": self.items,
            "comparisons": self.comparisons,
            "accuracy_with_ties": self.with_ties.as_dict(),
            "accuracy_without_ties": self.without_ties.as_dict(),
            "per_order_accuracy": self.per_order.as_dict(),
            "group_accuracy": {str(k): r.as_dict() for k, r in sorted(self.groups.items())},
            "inconsistent": None if self.inconsistent is None else self.inconsistent.as_dict(),
        }


def _counts(item: PreferenceItem) -> dict[str, tuple[float, float]]:
    """Per metric, (correct, counted) of one item."""
    labelled = [c for c in item.comparisons if c.human is not None]
    strict = [c for c in labelled if c.human not in TIE_KINDS]
    orders = [(c.human, o) for c in strict for o in c.orders if o is not None]
    counts = {
        "with_ties": (sum(agrees(c.human, c.judge) for c in labelled), len(labelled)),
        "without_ties": (sum(agrees(c.human, c.judge) for c in strict), len(strict)),
        "per_order": (sum(agrees(h, o) for h, o in orders), len(orders)),
        f"group_{item.size}": (
            float(item.complete and all(agrees(c.human, c.judge) for c in labelled)),
            1.0,
        ),
    }
    if item.inconsistent is not None:
        counts["inconsistent"] = (float(item.inconsistent), 1.0)
    return counts


def _rates(
    table: list[dict[str, tuple[float, float]]], n_boot: int, level: float, seed: int
) -> dict[str, Rate]:
    import numpy as np

    from cigeval.stats import percentile_interval

    metrics = sorted({name for counts in table for name in counts})
    num = np.array([[c.get(m, (0.0, 0.0))[0] for m in metrics] for c in table], dtype=float)
    den = np.array([[c.get(m, (0.0, 0.0))[1] for m in metrics] for c in table], dtype=float)
    num, den = num.reshape(len(table), len(metrics)), den.reshape(len(table), len(metrics))
    rates: dict[str, Rate] = {}
    boots: list[Any] = []
    if n_boot > 0 and table:
        rng = np.random.default_rng(seed)
        for start in range(0, n_boot, _BLOCK):
            count = min(_BLOCK, n_boot - start)
            weights = rng.multinomial(len(table), np.full(len(table), 1 / len(table)), count)
            with np.errstate(invalid="ignore", divide="ignore"):
                boots.append((weights @ num) / (weights @ den))
    resampled = np.concatenate(boots) if boots else None
    for index, metric in enumerate(metrics):
        correct, total = float(num[:, index].sum()), float(den[:, index].sum())
        rate = Rate(correct, total, correct / total if total else None)
        if resampled is not None and total:
            low, high = percentile_interval(resampled[:, index], level)
            rate.low, rate.high = low, high
        rates[metric] = rate
    return rates


def preference_row(
    items: Sequence[PreferenceItem],
    task: str = ALL_TASKS,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> PreferenceRow:
    """The agreement of ``items`` (see the module docstring for each count)."""
    rates = _rates([_counts(item) for item in items], n_boot, level, seed)
    empty = Rate(0.0, 0.0, None)
    groups = {
        int(name.split("_")[1]): rate for name, rate in rates.items() if name.startswith("group_")
    }
    return PreferenceRow(
        task=task,
        items=len(items),
        comparisons=sum(len(item.comparisons) for item in items),
        with_ties=rates.get("with_ties", empty),
        without_ties=rates.get("without_ties", empty),
        per_order=rates.get("per_order", empty),
        groups=groups,
        inconsistent=rates.get("inconsistent"),
    )


def preference_rows(
    items: Sequence[PreferenceItem], n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> list[PreferenceRow]:
    """The row over all tasks, then one row per task (in name order)."""
    rows = [preference_row(items, ALL_TASKS, n_boot, level, seed)]
    for task in sorted({item.task for item in items}):
        subset = [item for item in items if item.task == task]
        rows.append(preference_row(subset, task, n_boot, level, seed))
    return rows
