"""Judging schemes, selected with ``rubric=`` / ``--rubric``.

Built in: ``cigeval`` (the agent, :mod:`cigeval.agent`), ``viescore``, ``lmm_score`` and the
factor rubrics ``edit_quality``, ``instruction_fidelity``, ``image_preservation``; for samples
holding several candidates, ``pairwise`` (a direct comparative judge asked in every
presentation order) and ``pointwise`` (each candidate scored on its own, then ranked). Build a
factor rubric of your own with :func:`define_rubric`, or register any object following the
:class:`Rubric` protocol with :func:`register_rubric`.
"""

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports

if TYPE_CHECKING:
    from cigeval.rubrics.base import Rubric
    from cigeval.rubrics.custom import define_rubric
    from cigeval.rubrics.factor_rubric import Factor, FactorRubric, FactorText
    from cigeval.rubrics.registry import get_rubric, register_rubric, rubric_names

__all__ = [
    "Factor",
    "FactorRubric",
    "FactorText",
    "Rubric",
    "define_rubric",
    "get_rubric",
    "register_rubric",
    "rubric_names",
]

# Loaded on first use: reading a record's score range needs no rubric machinery.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Rubric": ".base",
        "define_rubric": ".custom",
        **dict.fromkeys(("Factor", "FactorRubric", "FactorText"), ".factor_rubric"),
        **dict.fromkeys(("get_rubric", "register_rubric", "rubric_names"), ".registry"),
    },
    __all__,
)
