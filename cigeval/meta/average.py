"""Averaging correlations over generators and tasks: the published ``paper`` way and ``fisher_z``.

``paper`` is what the VIEScore and CIGEval tables do (they call it Fisher-Z averaging, but never
apply arctanh): tanh of the plain mean of the raw rho over a task's generators, then tanh of the
mean of the task values. ``fisher_z`` is the textbook average of correlations: arctanh each rho,
take the mean, map back with tanh. The two differ noticeably: tanh shrinks a mean of raw rho
towards 0, while a true Fisher-z mean is slightly above the raw mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

Averaging = Literal["paper", "fisher_z"]
AVERAGINGS: tuple[str, ...] = ("paper", "fisher_z")
NanPolicy = Literal["propagate", "omit"]

#: |rho| is clipped below 1 before arctanh so a perfect correlation stays finite.
FISHER_CLIP = 1.0 - 1e-9

#: Decimals the published tables keep at each step (their code prints 4-decimal values and
#: averages the printed values).
PAPER_DECIMALS = 4

#: ``round_to="auto"``: the published rounding with ``paper`` averaging, none with ``fisher_z``.
AUTO = "auto"


@dataclass(frozen=True)
class Rounding:
    """How many decimals values keep before the next averaging step (None: all of them).

    ``correlations`` applies to each generator's own correlation (in the human row: each
    rater's); ``averages`` to every averaged value: a generator's mean over raters, a task's
    value and the overall average.
    """

    correlations: int | None = None
    averages: int | None = None

    @classmethod
    def to(cls, digits: int | None) -> Rounding:
        """The same number of decimals at every step (``--round N``)."""
        return cls(digits, digits)

    def describe(self) -> str:
        """A short phrase for table titles ('' when nothing is rounded)."""
        if self.correlations is None and self.averages is None:
            return ""
        if self.correlations == self.averages:
            return f"{self.averages} decimals kept at each step"
        if self.correlations is None:
            return f"averages rounded to {self.averages} decimals"
        return f"correlations to {self.correlations}, averages to {self.averages} decimals"

    def to_dict(self) -> dict[str, int | None]:
        """The JSON form."""
        return {"correlations": self.correlations, "averages": self.averages}


#: Score formats whose published rows were averaged from unrounded per-generator correlations.
_UNROUNDED_CORRELATIONS = frozenset({"viescore"})


def paper_rounding(source: str | None = None) -> Rounding:
    """The rounding that reproduces the published rows of a kind of source.

    The human row and the automatic-metric rows of the CIGEval/VIEScore tables (and CIGEval's
    own evaluation code, which prints each generator's rho to 4 decimals) keep 4 decimals of
    each generator's correlation and of every average; the VIEScore GPT-4o row was averaged from
    unrounded correlations, so recorded VIEScore-style tables (``source='viescore'``) round only
    the averages. Each rule, applied to the other kind, moves a published value by 0.0001.
    """
    if source in _UNROUNDED_CORRELATIONS:
        return Rounding(None, PAPER_DECIMALS)
    return Rounding.to(PAPER_DECIMALS)


def resolve_rounding(
    round_to: int | str | Rounding | None, averaging: str, source: str | None = None
) -> Rounding:
    """The rounding a meta-evaluation uses: ``'auto'`` is :func:`paper_rounding` with ``paper``
    averaging and none with ``fisher_z``; a number N keeps N decimals at every step; None none."""
    if isinstance(round_to, Rounding):
        return round_to
    if round_to == AUTO:
        return paper_rounding(source) if averaging == "paper" else Rounding()
    if round_to is None or isinstance(round_to, int):
        if isinstance(round_to, int) and round_to < 0:
            raise ValueError(f"cannot round to {round_to} decimals")
        return Rounding.to(round_to)
    raise ValueError(f"round_to must be 'auto', a number of decimals or None, got {round_to!r}")


def round_value(value: float, digits: int | None) -> float:
    """``value`` rounded to ``digits`` decimals (unchanged when None or NaN)."""
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
    round_to: int | Rounding | None = None,
    nan_policy: NanPolicy = "propagate",
    task_order: Iterable[str] | None = None,
) -> tuple[dict[str, float], float]:
    """Per-task values and the overall average from per-(task, model) correlations.

    ``per_model`` is indexed by (task, model). ``round_to`` (decimals, or a :class:`Rounding`)
    rounds the per-model values (``correlations``), the task values and the average
    (``averages``) before each next step, as the published tables did.
    """
    rounding = round_to if isinstance(round_to, Rounding) else Rounding.to(round_to)
    rounded = per_model.map(lambda v: round_value(float(v), rounding.correlations))
    order = list(task_order) if task_order is not None else []
    present = list(dict.fromkeys(per_model.index.get_level_values(0)))
    tasks = [t for t in order if t in present] + [t for t in present if t not in order]
    digits = rounding.averages
    task_values = {
        task: round_value(average_correlations(rounded.xs(task, level=0), mode, nan_policy), digits)
        for task in tasks
    }
    average = round_value(average_correlations(task_values.values(), mode, nan_policy), digits)
    return task_values, average
