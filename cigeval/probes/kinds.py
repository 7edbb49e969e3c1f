"""The probe kinds, their groups, and the checks a probe makes.

A probe compares a judge's scores of a *reference* sample (a good output, made to fit its
conditions) with its scores of a changed sample, and says which way they must move:

- ``must_drop`` kinds change the sample so that it is clearly worse: the score (or a named
  sub-question's score) must fall;
- ``must_hold`` kinds change nothing a person would notice: the score must stay put;
- ``must_not_tie`` kinds look at the scores of several clearly different outputs of a task:
  they must not all be (nearly) the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: How a probe's score must relate to the reference's (or, for ``not_tie``, to each other).
Relation = Literal["drop", "not_drop", "hold", "not_tie"]
Group = Literal["must_drop", "must_hold", "must_not_tie"]
#: The check target meaning "the sample's score" rather than one sub-question's score.
WHOLE_SCORE = "score"


@dataclass(frozen=True)
class Check:
    """One expectation of a probe: ``target`` (``"score"`` or a sub-question id) must
    ``relation`` (drop, not_drop, hold or not_tie)."""

    target: str
    relation: Relation

    def describe(self) -> str:
        """E.g. ``edit_success must drop``."""
        return f"{self.target} must {self.relation.replace('_', ' ')}"


@dataclass(frozen=True)
class ProbeKind:
    """A kind of probe: its name, its group and what it tells about the judge."""

    name: str
    group: Group
    meaning: str


#: Every probe kind, in the order reports list them.
PROBE_KINDS: dict[str, ProbeKind] = {
    kind.name: kind
    for kind in (
        ProbeKind(
            "blank_output",
            "must_drop",
            "the output is replaced by a uniform gray image: every score must fall",
        ),
        ProbeKind(
            "unchanged_source",
            "must_drop",
            "an edit returns the source unchanged: the edit (or the subject) must score lower, "
            "while over-editing / background preservation must not fall",
        ),
        ProbeKind(
            "wrong_output",
            "must_drop",
            "the output was made for another prompt or instruction: prompt following / edit "
            "success must fall",
        ),
        ProbeKind(
            "wrong_subject",
            "must_drop",
            "the subject reference image shows another subject than the output: subject "
            "similarity must fall",
        ),
        ProbeKind(
            "ignored_control",
            "must_drop",
            "the output ignores the control image's structure: control following must fall",
        ),
        ProbeKind(
            "jpeg_reencode",
            "must_hold",
            "the output is re-encoded as JPEG at quality 90: the score must stay within the "
            "hold tolerance",
        ),
        ProbeKind(
            "small_resize",
            "must_hold",
            "the output is resized to 90% of its side: the score must stay within the hold "
            "tolerance",
        ),
        ProbeKind(
            "repeat",
            "must_hold",
            "the reference sample is asked a second time, bypassing the response cache: the "
            "score must stay within the hold tolerance",
        ),
        ProbeKind(
            "spread",
            "must_not_tie",
            "the scores of the task's clearly different outputs (reference, blank, wrong, "
            "unchanged, ...) must span at least the minimum spread",
        ),
    )
}


def kind_names() -> list[str]:
    """Every probe kind name, in report order."""
    return list(PROBE_KINDS)
