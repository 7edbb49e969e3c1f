"""The rubric registry: built-in rubrics (loaded lazily), user rubrics and plugins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cigeval.errors import ConfigError
from cigeval.registry import Registry
from cigeval.rubrics.base import DEFAULT_SCORE_RANGE, Rubric, score_range_of

#: The built-in rubrics, as lazy import paths (the agent and its langgraph load on first use).
BUILTIN_RUBRICS: dict[str, str] = {
    "cigeval": "cigeval.agent.rubric:CigevalRubric",
    "viescore": "cigeval.rubrics.viescore:ViescoreRubric",
    "lmm_score": "cigeval.rubrics.lmm_score:LmmScoreRubric",
    "edit_quality": "cigeval.rubrics.factors:EDIT_QUALITY",
    "instruction_fidelity": "cigeval.rubrics.factors:INSTRUCTION_FIDELITY",
    "image_preservation": "cigeval.rubrics.factors:IMAGE_PRESERVATION",
    "pairwise": "cigeval.rubrics.pairwise:PairwiseRubric",
    "pointwise": "cigeval.rubrics.pointwise:PointwiseRubric",
}


def _as_rubric(item: object) -> Rubric:
    if isinstance(item, type):
        item = item()
    if not isinstance(item, Rubric):
        raise ConfigError(
            f"{item!r} is not a Rubric: it needs name, description, validate and evaluate"
        )
    return item


RUBRICS: Registry[Rubric] = Registry(
    "rubric", entry_point_group="cigeval.rubrics", coerce=_as_rubric
)
for _name, _path in BUILTIN_RUBRICS.items():
    RUBRICS.register_lazy(_name, _path)


def register_rubric(rubric: Rubric, *, replace: bool = False) -> Rubric:
    """Make ``rubric`` selectable with ``rubric=`` / ``--rubric`` under ``rubric.name``."""
    checked = _as_rubric(rubric)
    return RUBRICS.register(checked.name, checked, replace=replace)


def get_rubric(name: str) -> Rubric:
    """The rubric registered as ``name``; ConfigError listing the rubrics otherwise."""
    return RUBRICS.get(name)


def rubric_names() -> list[str]:
    """Names of every registered rubric."""
    return RUBRICS.names()


def record_score_range(record: Mapping[str, Any]) -> tuple[float, float]:
    """The range a results record's score must lie in: the ``score_range`` the record carries
    (written when its rubric declares one other than 0 to 1), else the declared range of its
    rubric as registered now, else 0 to 1. Reports and meta-evaluation use this one rule.

    Looked up on every call (a dictionary read once the rubric is loaded), so a rubric
    registered after its name was first seen gets its own range."""
    declared = record.get("score_range")
    if (
        isinstance(declared, list | tuple)
        and len(declared) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in declared)
    ):
        return float(declared[0]), float(declared[1])
    name = str(record.get("rubric") or "cigeval")
    if RUBRICS.unloaded(name) in BUILTIN_RUBRICS.values():
        return DEFAULT_SCORE_RANGE  # no built-in rubric declares a range: none is imported
    try:
        return score_range_of(RUBRICS.get(name))
    except Exception:  # not registered here, or cannot be loaded here: the default range
        return DEFAULT_SCORE_RANGE
