"""Judging samples: the Evaluator (one sample or thousands, ensembles) and one-call functions.

Data flow: a sample is validated and its images loaded; each judge of the ensemble runs the
rubric on a :class:`~cigeval.sample_run.SampleRun` and returns a Verdict; several verdicts are
combined (:mod:`cigeval.evaluation.ensemble`); :func:`assemble_score` makes the Score.
"""

from cigeval.evaluation.assemble import assemble_score
from cigeval.evaluation.evaluator import Evaluator, SampleInput
from cigeval.evaluation.functions import (
    evaluate,
    evaluate_async,
    evaluate_many,
    evaluate_many_async,
)

__all__ = [
    "Evaluator",
    "SampleInput",
    "assemble_score",
    "evaluate",
    "evaluate_async",
    "evaluate_many",
    "evaluate_many_async",
]
