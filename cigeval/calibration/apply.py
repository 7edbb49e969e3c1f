"""Applying a calibration file to results records: the calibrated value and its interval.

Every scored record keeps its raw score and gains ``calibrated``::

    "calibrated": {"value": 0.42, "interval": [0.17, 0.83]}

plus ``"abstain": true`` when an abstention width is set and the interval is wider, or
``"value": null`` with a ``note`` when the file holds nothing for the record's task or the
record lacks what the calibration reads. Records of another judge, rubric, method, aggregate
rule or prompt set are refused (:class:`~cigeval.calibration.binding.CalibrationMismatch`)
before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cigeval.calibration.binding import Binding, CalibrationMismatch, binding_of_record
from cigeval.calibration.file import Calibration, TaskCalibration
from cigeval.calibration.transforms import (
    aggregate,
    combine_jury,
    decide_votes,
    interval_bounds,
    monotone_map,
    vote_features,
)
from cigeval.errors import InputError


def record_value(record: Mapping[str, Any], dimension: str = "score") -> float:
    """The raw value a calibration reads from a record: ``dimensions[dimension]`` when the
    record has it, else ``score`` (NaN when there is none)."""
    dims = record.get("dimensions")
    value = dims.get(dimension) if isinstance(dims, Mapping) and dimension in dims else None
    if value is None:
        value = record.get("score")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def judge_sub_scores(record: Mapping[str, Any], judges: int) -> list[np.ndarray]:
    """Each judge's sub-scores of a record, each on [0, 1] (score / top of its scale): a
    single judge's from ``sub_scores``; an ensemble's from each sub-score's ``judgments``
    (judge by judge). A missing score is NaN."""
    subs = [s for s in record.get("sub_scores") or [] if isinstance(s, Mapping)]
    rows: list[list[float]] = [[] for _ in range(judges)]
    for sub in subs:
        scale = sub.get("scale") or (0, 10)
        top = float(scale[1]) if isinstance(scale, Sequence) and len(scale) == 2 else 10.0
        given = sub.get("judgments") if judges > 1 else [sub.get("score")]
        given = list(given) if isinstance(given, Sequence) else []
        for j in range(judges):
            value = given[j] if j < len(given) else None
            ok = isinstance(value, int | float) and not isinstance(value, bool) and top > 0
            rows[j].append(float(value) / top if ok else math.nan)  # type: ignore[arg-type]
    return [np.asarray(r, dtype=float) for r in rows]


def _all_stock(task: TaskCalibration) -> bool:
    return task.jury is None and all(r.get("rule") == "min" for r in task.judges)


def pre_map_score(
    task: TaskCalibration, record: Mapping[str, Any], dimension: str = "score"
) -> float:
    """The score the map and the interval read: the record's own value when every judge keeps
    the paper's ``min`` and there is no jury, else each judge's aggregated sub-scores, then
    the jury. NaN when the record lacks what is needed."""
    if _all_stock(task):
        return record_value(record, dimension)
    per_judge = judge_sub_scores(record, len(task.judges))
    scores = []
    for subs, rule in zip(per_judge, task.judges, strict=True):
        if rule.get("rule") == "min" and len(task.judges) == 1:
            scores.append(record_value(record, dimension))
        elif subs.size == 0:
            scores.append(math.nan)
        else:
            scores.append(float(aggregate(subs[None, :], rule)[0]))
    if task.jury is None:
        return scores[0]
    return float(combine_jury(np.asarray([scores]), task.jury)[0])


def check_binding(calibration: Calibration, found: Binding) -> None:
    """:class:`CalibrationMismatch` unless records bound as ``found`` fit ``calibration``."""
    differences = calibration.binding.differences(found)
    if differences:
        raise CalibrationMismatch(calibration.source or "file", differences)


def check_records(calibration: Calibration, records: Iterable[Mapping[str, Any]]) -> None:
    """Check every distinct binding among ``records`` (see :func:`check_binding`)."""
    seen: set[Binding] = set()
    for record in records:
        if record.get("status") != "ok":
            continue
        found = binding_of_record(record)
        if found not in seen:
            seen.add(found)
            check_binding(calibration, found)


def _scores_only(calibration: Calibration) -> None:
    if calibration.kind != "scores":
        raise InputError(
            f"calibration {calibration.source or ''} is a {calibration.kind} calibration (a "
            "decision between candidates from several judges' votes): apply it with "
            "cigeval.calibration.decide, not to scored records"
        )


def calibrated_field(
    calibration: Calibration,
    record: Mapping[str, Any],
    abstain_width: float | None = None,
) -> dict[str, Any] | None:
    """The ``calibrated`` entry of one record (None for a record that ended in error).

    ``abstain_width`` (default: the file's own) marks an item whose interval is wider.
    The binding is not checked here: check it once with :func:`check_records`.
    """
    _scores_only(calibration)
    if record.get("status") != "ok":
        return None
    task = calibration.task(str(record.get("task")))
    if task is None:
        return {
            "value": None,
            "interval": None,
            "note": f"the calibration holds nothing for task {record.get('task')!r}",
        }
    score = pre_map_score(task, record, calibration.dimension)
    if math.isnan(score):
        return {"value": None, "interval": None, "note": "no score the calibration can read"}
    low_end, high_end = calibration.scale
    value = float(np.clip(monotone_map(np.asarray([score]), task.map)[0], low_end, high_end))
    out: dict[str, Any] = {"value": value, "interval": None}
    if task.interval is not None:
        low, high = interval_bounds(np.asarray([score]), task.interval, calibration.scale)
        out["interval"] = [float(low[0]), float(high[0])]
        width = calibration.abstain_width if abstain_width is None else abstain_width
        if width is not None and out["interval"][1] - out["interval"][0] > width:
            out["abstain"] = True
    return out


def calibrate_records(
    calibration: Calibration,
    records: Iterable[Mapping[str, Any]],
    abstain_width: float | None = None,
) -> list[dict[str, Any]]:
    """Copies of ``records`` with ``calibrated`` added to each scored one, after checking
    that every record fits the calibration (:class:`CalibrationMismatch` otherwise)."""
    records = list(records)
    check_records(calibration, records)
    out = []
    for record in records:
        copy = dict(record)
        field = calibrated_field(calibration, record, abstain_width)
        if field is not None:
            copy["calibrated"] = field
        out.append(copy)
    return out


def decide(calibration: Calibration, votes: Sequence[Mapping[str, str | None]]) -> list[str | None]:
    """The four-way decision of a votes calibration for each item's judges' votes
    (judge -> ``A>B``, ``B>A``, ``A=B=Good``, ``A=B=Bad`` or None): the jury's, or where the
    jury was rejected the best single judge's own vote (None where it gave none)."""
    model = calibration.votes
    if calibration.kind != "votes" or model is None:
        raise InputError("decide() needs a votes calibration (cigeval calibrate votes)")
    if model.use == "best_single":
        return [item.get(model.best_single or "") for item in votes]
    features = vote_features(votes, model.judges, model.labels)
    return list(decide_votes(features, model.model_dump()))
