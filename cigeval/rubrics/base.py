"""The Rubric protocol and registry: a judging scheme turns a SampleRun into a Score."""

from __future__ import annotations

from typing import Protocol, get_args, runtime_checkable

from cigeval.combine import combine
from cigeval.config import Aggregate
from cigeval.errors import ConfigError
from cigeval.runtime import SampleRun
from cigeval.sample import Sample
from cigeval.score import Score


@runtime_checkable
class Rubric(Protocol):
    """A judging scheme (the agentic CIGEval rubric, VIEScore, LMM Score, factor rubrics...).

    ``validate`` raises :class:`cigeval.errors.InputError` when a sample lacks what the rubric
    needs; ``evaluate`` returns a Score (status ``ok`` or ``error``) and may raise on failures
    that the runner turns into an ``error`` record.
    """

    name: str
    description: str

    def validate(self, sample: Sample) -> None:
        """Check the sample has every field and image this rubric needs."""
        ...

    async def evaluate(self, run: SampleRun) -> Score:
        """Judge one sample."""
        ...


_RUBRICS: dict[str, Rubric] = {}
#: The rules a task's sub-scores can be aggregated with.
AGGREGATES: tuple[str, ...] = get_args(Aggregate)


def register_rubric(rubric: Rubric, *, replace: bool = False) -> Rubric:
    """Make ``rubric`` selectable with ``rubric=`` / ``--rubric``."""
    if not isinstance(rubric, Rubric):
        raise ConfigError(
            f"{rubric!r} is not a Rubric: it needs name, description, validate, evaluate"
        )
    if rubric.name in _RUBRICS and not replace:
        raise ConfigError(
            f"a rubric named {rubric.name!r} is already registered (pass replace=True)"
        )
    _RUBRICS[rubric.name] = rubric
    return rubric


def get_rubric(name: str) -> Rubric:
    """The rubric registered as ``name``."""
    try:
        return _RUBRICS[name]
    except KeyError:
        raise ConfigError(f"unknown rubric {name!r}; available: {', '.join(_RUBRICS)}") from None


def rubric_names() -> list[str]:
    """Names of all registered rubrics."""
    return list(_RUBRICS)


def aggregate_scores(values: list[float], how: str) -> float:
    """Combine sub-scores: min (the paper), mean, median or max."""
    if not values:
        raise ValueError("no sub-scores to aggregate")
    if how not in AGGREGATES:
        raise ConfigError(f"unknown aggregate {how!r}; use min, mean, median or max")
    return combine(values, how)
