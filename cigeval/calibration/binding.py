"""What a calibration was fitted for, and the refusal of records made another way.

A calibration learned from one judge's scores says nothing about another judge's, another
rubric's, another method's or the same judge's under other prompts. The file therefore
records a :class:`Binding` (read from the records it was fitted on, or declared for stored
tables), and applying it to records whose binding differs raises
:class:`CalibrationMismatch`, naming every field that differs.

The prompt set is what records hold: ``provenance.prompt_set`` (``official:<hash>``,
``paraphrase``, ``cigeval`` or ``custom:<hash>``, see :mod:`cigeval.prompts.prompt_set`);
records written before prompt sets existed are bound by their templates' sha256
(``templates:<sha256>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from cigeval.errors import InputError

#: The fields compared, in the order a mismatch lists them.
BOUND_FIELDS = ("judges", "rubric", "method", "aggregate", "prompt_set")


class CalibrationMismatch(InputError):
    """A calibration file applied to records of another judge, rubric, method, aggregate rule
    or prompt set than it was fitted for; ``differences`` names each."""

    def __init__(self, source: str, differences: list[str]) -> None:
        self.differences = differences
        super().__init__(
            f"calibration {source} does not fit these records: " + "; ".join(differences)
        )


class Binding(BaseModel):
    """The judge a calibration belongs to: its judges (one, or a jury's in order), rubric,
    method profile, aggregate rule and prompt set. ``None`` leaves a field unbound (a stored
    table that does not say its method)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judges: tuple[str, ...]
    rubric: str | None = None
    method: str | None = None
    aggregate: str | None = None
    prompt_set: str | None = None

    def differences(self, found: Binding) -> list[str]:
        """What differs between this (fitted) binding and ``found`` (the records'), each as
        ``field: fitted for X, the records have Y``; unbound fields never differ."""
        out = []
        for name in BOUND_FIELDS:
            fitted, other = getattr(self, name), getattr(found, name)
            if fitted is None or fitted == other:
                continue
            shown = ", ".join(fitted) if isinstance(fitted, tuple) else fitted
            seen = ", ".join(other) if isinstance(other, tuple) else other
            out.append(f"{name}: fitted for {shown!r}, the records have {seen!r}")
        return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def binding_of_record(record: Mapping[str, Any]) -> Binding:
    """The binding of a results record (a ``Score.to_record()`` dict): its judges from
    ``provenance.judges`` (else the ``judge`` field), rubric, method, aggregate rule and
    prompt set (else its templates' sha256)."""
    provenance = _mapping(record.get("provenance"))
    config = _mapping(record.get("config"))
    entries = [j for j in provenance.get("judges") or [] if isinstance(j, Mapping)]
    judges = tuple(str(j.get("judge")) for j in entries if j.get("judge"))
    if not judges and record.get("judge"):
        judges = tuple(str(record["judge"]).split(","))
    prompt_set = provenance.get("prompt_set")
    if not prompt_set:
        hashes = [str(j["prompts_sha256"]) for j in entries if j.get("prompts_sha256")]
        prompt_set = f"templates:{','.join(dict.fromkeys(hashes))}" if hashes else None
    return Binding(
        judges=judges,
        rubric=str(record.get("rubric") or config.get("rubric") or "") or None,
        method=provenance.get("method") or config.get("method"),
        aggregate=config.get("aggregate"),
        prompt_set=prompt_set,
    )
