"""Judging schemes, selected with ``rubric=`` / ``--rubric``."""

from cigeval.rubrics.base import Rubric, aggregate_scores, get_rubric, register_rubric, rubric_names
from cigeval.rubrics.cigeval_rubric import CigevalRubric

register_rubric(CigevalRubric(), replace=True)

__all__ = [
    "CigevalRubric",
    "Rubric",
    "aggregate_scores",
    "get_rubric",
    "register_rubric",
    "rubric_names",
]
