"""The numbers of a report: leaderboard cells with bootstrap intervals, the correlation with
human ratings, and the agreement between judges.

Bootstrap intervals and correlations come from :mod:`cigeval.stats` (numpy alone, imported
on use): a report never loads scipy.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from cigeval.comparisons.inputs import is_preference_record
from cigeval.results.record import NO_GENERATOR, generator_of, group_of
from cigeval.results.run import Run, score_of


@dataclass
class Cell:
    """One leaderboard cell: the mean score of a group, its interval, and its counts."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    errors: int

    def as_dict(self) -> dict[str, Any]:
        """The cell as plain JSON-ready values."""
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "errors": self.errors,
        }


def cell(scores: list[float], errors: int, n_boot: int, level: float, seed: int) -> Cell:
    """A leaderboard cell from the ok scores and the error count of one group."""
    if not scores:
        return Cell(None, None, None, 0, errors)
    from cigeval.stats import bootstrap_mean_interval

    low, high = bootstrap_mean_interval(scores, n_boot, level, seed)
    return Cell(sum(scores) / len(scores), _finite(low), _finite(high), len(scores), errors)


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


@dataclass
class Leaderboard:
    """One run's leaderboard: generators ranked by their mean score over all their samples.

    ``overall[g]`` is the cell of generator g over every task; ``by_task[g][t]`` the cell of
    generator g on task t; ``ranking`` the generators, best mean first (generators without
    any ok sample last). Records that name no generator are no competitor: they have their
    own row (``unranked``, :data:`~cigeval.results.record.NO_GENERATOR`), never ranked.
    """

    run: str
    tasks: list[str]
    ranking: list[str]
    overall: dict[str, Cell]
    by_task: dict[str, dict[str, Cell]]
    unranked: list[str] = field(default_factory=list)
    #: The field the columns group records by (``--group-by``); None: the task.
    group_by: str | None = None
    #: Per generator, the cell of its calibrated values (records with ``calibrated``, from a
    #: calibration file: docs/calibration.md); empty when no record has one.
    calibrated: dict[str, Cell] = field(default_factory=dict)

    def rank(self, generator: str) -> int | None:
        """1 + the number of ranked generators with a higher mean (ties share a rank); None
        for an unranked row."""
        if generator in self.unranked:
            return None
        ranked = [self.overall[g] for g in self.ranking]
        mean = self.overall[generator].mean
        if mean is None:
            return 1 + sum(1 for c in ranked if c.mean is not None)
        return 1 + sum(1 for c in ranked if c.mean is not None and c.mean > mean)


def leaderboard(
    run: Run, n_boot: int = 1000, level: float = 0.95, seed: int = 0, group_by: str | None = None
) -> Leaderboard:
    """The leaderboard of one run (see :class:`Leaderboard`); its columns are the tasks, or
    the values of the record field ``group_by`` (:func:`~cigeval.results.record.group_of`:
    ``category``, ``seed``, ``metadata.tag``, ...)."""
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    calibrated: dict[str, list[float]] = defaultdict(list)
    errors: dict[tuple[str, str], int] = defaultdict(int)
    tasks: dict[str, None] = {}
    generators: dict[str, None] = {}
    for record in run.records:
        if is_preference_record(record):
            continue  # a preference between candidates, not a score: the Compare section
        key = (generator_of(record), column_of(record, group_by))
        generators.setdefault(key[0], None)
        tasks.setdefault(key[1], None)
        value = score_of(record)
        if value is None:
            errors[key] += 1
        else:
            scores[key].append(value)
            mapped = (record.get("calibrated") or {}).get("value")
            if isinstance(mapped, int | float):
                calibrated[key[0]].append(float(mapped))
    overall: dict[str, Cell] = {}
    by_task: dict[str, dict[str, Cell]] = {}
    for generator in generators:
        pooled = [v for t in tasks for v in scores.get((generator, t), [])]
        failed = sum(errors.get((generator, t), 0) for t in tasks)
        overall[generator] = cell(pooled, failed, n_boot, level, seed)
        by_task[generator] = {
            t: cell(
                scores.get((generator, t), []), errors.get((generator, t), 0), n_boot, level, seed
            )
            for t in tasks
            if (generator, t) in scores or (generator, t) in errors
        }
    ranking = sorted(
        (g for g in generators if g != NO_GENERATOR),
        key=lambda g: (overall[g].mean is None, -(overall[g].mean or 0.0), g),
    )
    unranked = [NO_GENERATOR] if NO_GENERATOR in generators else []
    return Leaderboard(
        run.label,
        sorted(tasks),
        ranking,
        overall,
        by_task,
        unranked,
        group_by,
        {g: cell(values, 0, n_boot, level, seed) for g, values in calibrated.items()},
    )


def column_of(record: dict[str, Any], group_by: str | None) -> str:
    """The leaderboard column of a record: its task, or its value of ``group_by``."""
    return str(record.get("task", "?")) if group_by is None else group_of(record, group_by)


@dataclass
class HumanAgreement:
    """The correlation of one run's scores with the records' ``human`` ratings on one task."""

    task: str
    n: int
    spearman: float | None
    pearson: float | None
    low: float | None
    high: float | None
    pairs: list[tuple[float, float]]
    note: str | None = None


def human_rating(record: dict[str, Any]) -> float | None:
    """The record's own human rating on [0, 1] (the overall ``O`` of a dict by dimension),
    or None when it has none or it is not such a number."""
    from cigeval.errors import InputError
    from cigeval.meta.record_ratings import record_human_score

    human = record.get("human")
    dimension = "O" if isinstance(human, dict) and "O" in human else "SC"
    try:
        return record_human_score(record, dimension)
    except InputError:
        return None


def human_agreement(
    run: Run, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> list[HumanAgreement]:
    """Per task, Spearman and Pearson of the judge's scores with the human ratings, with a
    bootstrap interval of the Spearman; empty when no record has a rating."""
    import numpy as np

    from cigeval.stats import bootstrap_ci, correlation, undefined_reason

    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for record in run.records:
        value, human = score_of(record), human_rating(record)
        if value is not None and human is not None:
            pairs[str(record.get("task", "?"))].append((value, human))
    out = []
    for task in sorted(pairs):
        judged = np.array([p[0] for p in pairs[task]])
        humans = np.array([p[1] for p in pairs[task]])
        note = undefined_reason(humans, judged)
        rho = correlation(humans, judged, "spearman")
        r = correlation(humans, judged, "pearson")
        low, high = bootstrap_ci(humans, judged, "spearman", n_boot, level, seed)
        out.append(
            HumanAgreement(
                task, len(judged), _finite(rho), _finite(r), _finite(low), _finite(high),
                pairs[task], note,
            )
        )  # fmt: skip
    return out


@dataclass
class JudgeAgreement:
    """How two runs agree on the samples both scored ``ok``."""

    first: str
    second: str
    n: int
    spearman: float | None
    pearson: float | None
    mean_abs_diff: float | None


def judge_agreement(first: Run, second: Run) -> JudgeAgreement:
    """Spearman, Pearson and mean absolute difference of two runs, matched by sample id."""
    import numpy as np

    from cigeval.stats import correlation

    theirs = {sid: score_of(r) for sid, r in second.by_id().items()}
    pairs = []
    for sid, record in first.by_id().items():
        a, b = score_of(record), theirs.get(sid)
        if a is not None and b is not None:
            pairs.append((a, b))
    if not pairs:
        return JudgeAgreement(first.label, second.label, 0, None, None, None)
    x = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    return JudgeAgreement(
        first.label,
        second.label,
        len(pairs),
        _finite(correlation(x, y, "spearman")),
        _finite(correlation(x, y, "pearson")),
        float(np.mean(np.abs(x - y))),
    )
