"""Tie-aware agreement: within-prompt win/tie/loss accuracy beside the correlations.

A correlation says whether an evaluator orders images as people do; it says nothing of ties.
Two images of one prompt (one benchmark sample, two generators) make a pair: people prefer
one (their mean ratings differ) or tie (equal means); the evaluator prefers one when its two
scores differ by more than ``band`` (0: only equal scores tie), else ties. The agreement is
the share of pairs where both say the same, win, tie or loss. The human row is each rater
against the mean of the other raters, averaged over raters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: Two human means closer than this are equal (they are averages of a few ratings).
HUMAN_TIE = 1e-9


def prompt_pairs(
    groups: Sequence[Any] | np.ndarray, cells: Sequence[Any] | np.ndarray | None = None
) -> np.ndarray:
    """Index pairs (m x 2) of items of one prompt group (of different cells when given)."""
    names = np.asarray([str(g) for g in groups])
    order = np.argsort(names, kind="stable")
    pairs = []
    start = 0
    for end in range(1, len(order) + 1):
        if end == len(order) or names[order[end]] != names[order[start]]:
            members = order[start:end]
            for a in range(len(members)):
                for b in range(a + 1, len(members)):
                    i, k = members[a], members[b]
                    if cells is None or cells[i] != cells[k]:
                        pairs.append((i, k))
            start = end
    return np.asarray(pairs, dtype=int).reshape(-1, 2)


def outcome(difference: np.ndarray, band: float) -> np.ndarray:
    """-1, 0 or 1 for each difference: a tie within ``band``, else its sign."""
    return np.where(np.abs(difference) <= band + 1e-12, 0, np.sign(difference))


def agreement(
    human: np.ndarray, values: np.ndarray, pairs: np.ndarray, band: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """For each pair: whether the evaluator's win/tie/loss matches people's, and whether the
    pair counts (both sides have both values)."""
    if not len(pairs):
        return np.zeros(0, bool), np.zeros(0, bool)
    a, b = pairs[:, 0], pairs[:, 1]
    counts = ~(np.isnan(values[a]) | np.isnan(values[b]) | np.isnan(human[a]) | np.isnan(human[b]))
    people = outcome(human[a] - human[b], HUMAN_TIE)
    judge = outcome(values[a] - values[b], band)
    return (people == judge) & counts, counts


@dataclass
class TieAgreement:
    """Within-prompt win/tie/loss agreement: per task, pooled over every pair (``overall``),
    how many pairs counted, and how often the evaluator and people call a tie."""

    tasks: dict[str, float]
    overall: float | None
    pairs: int
    judge_ties: float | None
    human_ties: float | None
    band: float = 0.0
    interval: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "within_prompt_wtl": self.overall,
            "interval": self.interval,
            "tasks": self.tasks,
            "pairs": self.pairs,
            "evaluator_ties": self.judge_ties,
            "human_ties": self.human_ties,
            "band": self.band,
        }

    def line(self) -> str:
        """One line for the table."""
        if self.overall is None:
            return "within-prompt win/tie/loss agreement: no prompt with two scored images"
        shown = f" [{self.interval[0]:.3f}, {self.interval[1]:.3f}]" if self.interval else ""
        ties = ""
        if self.judge_ties is not None and self.human_ties is not None:
            ties = f"; ties: evaluator {self.judge_ties:.0%}, people {self.human_ties:.0%}"
        return (
            f"within-prompt win/tie/loss agreement: {self.overall:.4f}{shown} over "
            f"{self.pairs} pairs{ties}"
        )


def _frame_arrays(human: pd.Series, scores: pd.Series) -> tuple[np.ndarray, ...]:
    joined = pd.DataFrame({"h": human, "s": scores}).dropna()
    index = joined.index
    tasks = np.asarray(index.get_level_values("task"), dtype=str)
    models = np.asarray(index.get_level_values("model"), dtype=str)
    uids = np.asarray(index.get_level_values("uid"), dtype=str)
    groups = np.char.add(np.char.add(tasks, "\x00"), uids)
    return joined["h"].to_numpy(float), joined["s"].to_numpy(float), tasks, models, groups


def within_prompt_agreement(
    human: pd.Series,
    scores: pd.Series,
    band: float = 0.0,
    n_boot: int = 0,
    seed: int = 0,
    level: float = 0.95,
) -> TieAgreement:
    """The win/tie/loss agreement of ``scores`` with ``human`` (both indexed by task, model,
    uid) over pairs of generators' images of one sample; ``n_boot`` adds a percentile
    interval, samples (prompts) resampled with all their pairs."""
    h, s, tasks, models, groups = _frame_arrays(human, scores)
    pairs = prompt_pairs(groups, models)
    agree, counted = agreement(h, s, pairs, band)
    by_task = {}
    pair_tasks = tasks[pairs[:, 0]] if len(pairs) else np.zeros(0, dtype=str)
    for task in dict.fromkeys(pair_tasks.tolist()):
        mask = (pair_tasks == task) & counted
        by_task[task] = float(agree[mask].mean()) if mask.any() else float("nan")
    total = int(counted.sum())
    if not total:
        return TieAgreement(by_task, None, 0, None, None, band)
    a, b = pairs[counted, 0], pairs[counted, 1]
    judge_ties = float((outcome(s[a] - s[b], band) == 0).mean())
    human_ties = float((outcome(h[a] - h[b], HUMAN_TIE) == 0).mean())
    interval = None
    if n_boot > 0:
        interval = _interval(agree[counted], groups[a], n_boot, seed, level)
    return TieAgreement(
        by_task, float(agree[counted].mean()), total, judge_ties, human_ties, band, interval
    )


def _interval(
    values: np.ndarray, groups: np.ndarray, n_boot: int, seed: int, level: float
) -> list[float] | None:
    from cigeval.stats import percentile_interval

    _, codes = np.unique(groups, return_inverse=True)
    count = int(codes.max()) + 1
    sums = np.bincount(codes, weights=values.astype(float), minlength=count)
    sizes = np.bincount(codes, minlength=count).astype(float)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(count, np.full(count, 1.0 / count), size=n_boot)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (weights @ sums) / (weights @ sizes)
    low, high = percentile_interval(draws, level)
    return None if np.isnan(low) else [low, high]


def raters_within_prompt(matrix: pd.DataFrame) -> TieAgreement:
    """The human row: each rater (a column of ``matrix``, indexed by task, model, uid)
    against the mean of the others, per task and overall, averaged over raters."""
    rows = [
        within_prompt_agreement(matrix.drop(columns=rater).mean(axis=1), matrix[rater])
        for rater in matrix.columns
    ]
    defined = [r for r in rows if r.overall is not None]
    if not defined:
        return TieAgreement({}, None, 0, None, None)
    tasks = {t: float(np.mean([r.tasks[t] for r in defined])) for t in defined[0].tasks}
    return TieAgreement(
        tasks,
        float(np.mean([r.overall for r in defined])),
        defined[0].pairs,
        float(np.mean([r.judge_ties for r in defined if r.judge_ties is not None])),
        float(np.mean([r.human_ties for r in defined if r.human_ties is not None])),
    )
