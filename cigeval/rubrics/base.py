"""The Rubric protocol: a judging scheme turns a SampleRun into a Verdict."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from cigeval.sample import Sample
    from cigeval.sample_run import SampleRun
    from cigeval.score import Verdict


@runtime_checkable
class Rubric(Protocol):
    """A judging scheme (the agentic CIGEval rubric, VIEScore, LMM Score, factor rubrics...).

    ``validate`` raises :class:`cigeval.errors.InputError` when a sample lacks what the rubric
    needs; ``evaluate`` returns a :class:`~cigeval.score.Verdict` (a value, or the error that
    prevented one) and may raise on failures, which the evaluator turns into an ``error``
    record. The evaluator adds the sample's identity, trace, usage and settings.

    A rubric may declare ``score_range = (low, high)``: the values its verdicts can take
    (default :data:`DEFAULT_SCORE_RANGE`, 0 to 1). A value outside it (or not a finite number)
    never becomes a score: the sample ends in ``error`` naming the rubric, the value and the
    range. The attribute is optional, so rubrics written without it keep working.
    """

    name: str
    description: str

    def validate(self, sample: Sample) -> None:
        """Check the sample has every field and image this rubric needs."""
        ...

    async def evaluate(self, run: SampleRun) -> Verdict:
        """Judge one sample."""
        ...


#: The values a rubric's verdicts take unless it declares ``score_range``: 0 to 1.
DEFAULT_SCORE_RANGE: tuple[float, float] = (0.0, 1.0)


def score_range_of(rubric: Any) -> tuple[float, float]:
    """The ``score_range`` a rubric declares, else :data:`DEFAULT_SCORE_RANGE`."""
    declared = getattr(rubric, "score_range", None)
    if declared is None:
        return DEFAULT_SCORE_RANGE
    low, high = declared
    return float(low), float(high)


def out_of_range(value: Any, score_range: tuple[float, float]) -> bool:
    """True when ``value`` is not a finite number within ``score_range`` (bounds included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    low, high = score_range
    return not math.isfinite(value) or not low <= value <= high
