"""Judging schemes, selected with ``rubric=`` / ``--rubric``."""

from cigeval.rubrics.base import Rubric, aggregate_scores, get_rubric, register_rubric, rubric_names
from cigeval.rubrics.cigeval_rubric import CigevalRubric
from cigeval.rubrics.custom import Factor, FactorRubric, define_rubric
from cigeval.rubrics.factors import (
    EDIT_QUALITY,
    FACTOR_RUBRICS,
    IMAGE_PRESERVATION,
    INSTRUCTION_FIDELITY,
)
from cigeval.rubrics.lmm_score import LmmScoreRubric
from cigeval.rubrics.viescore import ViescoreRubric

register_rubric(CigevalRubric(), replace=True)
register_rubric(ViescoreRubric(), replace=True)
register_rubric(LmmScoreRubric(), replace=True)
for _factor_rubric in FACTOR_RUBRICS:
    register_rubric(_factor_rubric, replace=True)

__all__ = [
    "EDIT_QUALITY",
    "IMAGE_PRESERVATION",
    "INSTRUCTION_FIDELITY",
    "CigevalRubric",
    "Factor",
    "FactorRubric",
    "LmmScoreRubric",
    "Rubric",
    "ViescoreRubric",
    "aggregate_scores",
    "define_rubric",
    "get_rubric",
    "register_rubric",
    "rubric_names",
]
