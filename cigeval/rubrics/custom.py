"""User-defined rubrics: :func:`define_rubric` builds and registers a factor rubric.

A factor rubric needs no cigeval internals: name the factors, pick a scale, optionally give a
prompt template and an aggregate. cigeval writes the prompt, validates the judge's JSON
strictly, re-asks on errors and writes ordinary result records. The built-in
``edit_quality``, ``instruction_fidelity`` and ``image_preservation`` rubrics are instances
of the same :class:`FactorRubric`::

    from cigeval.rubrics.custom import define_rubric

    define_rubric(
        "text_legibility",
        factors={"legibility": "Whether text the instruction adds can be read without effort."},
        scale=(1, 5),
    )
    # then Evaluator(model, rubric="text_legibility") or `cigeval evaluate --rubric ...`
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cigeval.errors import ConfigError
from cigeval.rubrics.factor_rubric import (
    MODE_ROLES,
    AggregateFunction,
    Factor,
    FactorRubric,
    FactorText,
)
from cigeval.rubrics.registry import register_rubric

__all__ = ["AggregateFunction", "Factor", "FactorRubric", "FactorText", "define_rubric"]


def define_rubric(
    name: str,
    factors: Mapping[str, str | Factor | Mapping[str, Any]] | Sequence[Factor],
    *,
    scale: tuple[int, int] = (1, 7),
    template: str | Path | None = None,
    result_key: str = "{mode}_factor_results",
    aggregate: str | Mapping[str, float] | AggregateFunction = "mean",
    description: str = "",
    focus: str = "",
    mode: str = "auto",
    justification_words: tuple[int, int] | None = (15, 30),
    anchors: Mapping[str, Sequence[str]] | None = None,
    constraints: Mapping[str, Sequence[str]] | None = None,
    register: bool = True,
    replace: bool = False,
) -> FactorRubric:
    """Build a :class:`FactorRubric` and (by default) register it under ``name``.

    ``factors`` maps each JSON key to a one-sentence definition, or to a :class:`Factor` or a
    dict of its fields (``definition``, ``checks``, ``high``, ``low``, ``title``) for checks and
    score bands; or it is a list of Factors. That wording serves both modes; a dict may also
    hold ``offline`` and/or ``online``: a dict of the same four fields (or a
    :class:`FactorText`) worded for that mode alone, e.g. relative to the ground truth.
    ``anchors`` gives one label per scale point for "offline" and/or "online" (the 7-point
    labels are the default on a 1-7 scale); ``constraints`` extra rules per mode. Other
    arguments are those of :class:`FactorRubric`. After registering, the rubric is
    selected like any built-in: ``Evaluator(model, rubric=name)`` or ``--rubric name``.
    """
    if isinstance(factors, Mapping):
        built = [_factor(key, value) for key, value in factors.items()]
        mismatched = [f.key for k, f in zip(factors, built, strict=True) if f.key != k]
        if mismatched:
            raise ConfigError(f"factor keys {mismatched} differ from their mapping keys")
    else:
        built = list(factors)
    rubric = FactorRubric(
        name,
        built,
        description=description,
        focus=focus,
        scale=scale,
        mode=mode,
        result_key=result_key,
        aggregate=aggregate,
        justification_words=justification_words,
        template=template,
        anchors=anchors,
        constraints=constraints,
    )
    if register:
        register_rubric(rubric, replace=replace)
    return rubric


def _factor(key: str, value: str | Factor | Mapping[str, Any]) -> Factor:
    if isinstance(value, Factor):
        return value
    if isinstance(value, Mapping):
        fields = _fields(value)
        try:
            for mode in MODE_ROLES:
                if isinstance(fields.get(mode), Mapping):
                    fields[mode] = FactorText(**_fields(fields[mode]))
            return Factor(key, **fields)
        except TypeError as exc:
            raise ConfigError(f"factor {key!r}: {exc}") from None
    return Factor(key=key, definition=str(value))


def _fields(value: Mapping[str, Any]) -> dict[str, Any]:
    """A factor's fields from a dict, with lists (from JSON or YAML) made tuples."""
    return {k: tuple(v) if isinstance(v, list | tuple) else v for k, v in value.items()}
