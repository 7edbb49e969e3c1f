"""The Rubric protocol: a judging scheme turns a SampleRun into a Verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

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
    """

    name: str
    description: str

    def validate(self, sample: Sample) -> None:
        """Check the sample has every field and image this rubric needs."""
        ...

    async def evaluate(self, run: SampleRun) -> Verdict:
        """Judge one sample."""
        ...
