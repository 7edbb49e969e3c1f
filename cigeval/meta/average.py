"""Averaging correlations over generators and tasks: the published ``paper`` way and ``fisher_z``.

``paper`` is what the VIEScore and CIGEval tables do (they call it Fisher-Z averaging, but never
apply arctanh): tanh of the plain mean of the raw rho over a task's generators, then tanh of the
mean of the task values. ``fisher_z`` is the textbook average of correlations: arctanh each rho,
take the mean, map back with tanh. The two differ noticeably: tanh shrinks a mean of raw rho
towards 0, while a true Fisher-z mean is slightly above the raw mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
import pandas as pd

Averaging = Literal["paper", "fisher_z"]
AVERAGINGS: tuple[str, ...] = ("paper", "fisher_z")
NanPolicy = Literal["propagate", "omit"]

#: |rho| is clipped below 1 before arctanh so a perfect correlation stays finite.
FISHER_CLIP = 1.0 - 1e-9


def _round(value: float, digits: int | None) -> float:
    if digits is None or math.isnan(value):
        return value
    return float(np.round(value, digits))


def average_correlations(
    values: Iterable[float], mode: Averaging = "paper", nan_policy: NanPolicy = "propagate"
) -> float:
    """Average several correlations: ``paper`` = tanh(mean rho), ``fisher_z`` = tanh(mean atanh).

    Undefined values (NaN) make the result NaN under ``propagate``; ``omit`` averages the
    defined ones (NaN if none is).
    """
    array = np.asarray(list(values), dtype=float)
    if nan_policy == "omit":
        array = array[~np.isnan(array)]
    elif nan_policy != "propagate":
        raise ValueError(f"unknown nan_policy {nan_policy!r}; use 'propagate' or 'omit'")
    if array.size == 0 or np.isnan(array).any():
        return math.nan
    if mode == "paper":
        return float(np.tanh(array.mean()))
    if mode == "fisher_z":
        clipped = np.clip(array, -FISHER_CLIP, FISHER_CLIP)
        return float(np.tanh(np.arctanh(clipped).mean()))
    raise ValueError(f"unknown averaging {mode!r}; choose one of {AVERAGINGS}")


def average_tasks(
    per_model: pd.Series,
    mode: Averaging = "paper",
    round_to: int | None = None,
    nan_policy: NanPolicy = "propagate",
    task_order: Iterable[str] | None = None,
) -> tuple[dict[str, float], float]:
    """Per-task values and the overall average from per-(task, model) correlations.

    ``per_model`` is indexed by (task, model). With ``round_to`` the per-model values, the task
    values and the average are each rounded to that many decimals before the next step, which
    is what the published human-rater row needs.
    """
    rounded = per_model.map(lambda v: _round(float(v), round_to))
    order = list(task_order) if task_order is not None else []
    present = list(dict.fromkeys(per_model.index.get_level_values(0)))
    tasks = [t for t in order if t in present] + [t for t in present if t not in order]
    task_values = {
        task: _round(average_correlations(rounded.xs(task, level=0), mode, nan_policy), round_to)
        for task in tasks
    }
    average = _round(average_correlations(task_values.values(), mode, nan_policy), round_to)
    return task_values, average


def average_per_model(
    values: Mapping[tuple[str, str], Iterable[float]],
    mode: Averaging = "paper",
    nan_policy: NanPolicy = "propagate",
) -> pd.Series:
    """One value per (task, model) from several correlations each (e.g. one per rater)."""
    index = pd.MultiIndex.from_tuples(list(values.keys()), names=["task", "model"])
    return pd.Series(
        [average_correlations(v, mode, nan_policy) for v in values.values()],
        index=index,
        dtype=float,
    )
