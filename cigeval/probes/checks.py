"""Measuring a probe's checks: which score each check reads, and whether it moved as expected.

A check names either the sample's score (``"score"``) or a sub-question (``"edit_success"``).
A sub-question check reads that sub-score when the rubric reports it (``cigeval``,
``viescore``); a rubric whose score measures one aspect (the factor rubrics, see
:data:`RUBRIC_FOCUS`) answers it with its sample score; otherwise the check does not apply to
the rubric, and a probe none of whose checks apply is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cigeval.probes.kinds import WHOLE_SCORE, Check
from cigeval.probes.report import CheckResult, SampleOutcome
from cigeval.probes.settings import ProbeConfig
from cigeval.registry import normalize_name

#: Rubrics whose sample score measures one aspect of a task, by the sub-question ids it
#: stands for. Add an entry for a factor rubric of your own to give it the sub-question probes.
RUBRIC_FOCUS: dict[str, tuple[str, ...]] = {
    "instruction_fidelity": ("edit_success",),
    "image_preservation": ("over_editing", "background_preservation"),
}
#: Float slack so a score exactly at a threshold passes.
_EPSILON = 1e-9


@dataclass(frozen=True)
class MeasuredCheck:
    """A check and the score that measures it: the sample's score or one sub-score."""

    check: Check
    measured_by: Literal["score", "sub_score"]

    def value(self, outcome: SampleOutcome) -> float | None:
        """The score this check reads from ``outcome`` (None when absent)."""
        if self.measured_by == "score":
            return outcome.score
        return outcome.sub_scores.get(self.check.target)


def measure_checks(
    checks: tuple[Check, ...], rubric: str, sub_score_ids: set[str]
) -> list[MeasuredCheck]:
    """The checks that apply to ``rubric``, given the sub-score ids it reported for the
    task's reference sample."""
    focus = {
        q
        for name, qs in RUBRIC_FOCUS.items()
        if normalize_name(name) == normalize_name(rubric)
        for q in qs
    }
    measured = []
    for check in checks:
        if check.target == WHOLE_SCORE:
            measured.append(MeasuredCheck(check, "score"))
        elif check.target in sub_score_ids:
            measured.append(MeasuredCheck(check, "sub_score"))
        elif check.target in focus:
            measured.append(MeasuredCheck(check, "score"))
    return measured


def compare_pair(
    measured: MeasuredCheck,
    reference: SampleOutcome,
    probe: SampleOutcome,
    settings: ProbeConfig,
) -> CheckResult:
    """Whether ``probe``'s score moved from ``reference``'s as the check expects.

    Raises ValueError when a score the check needs is missing from an ok outcome.
    """
    before, after = measured.value(reference), measured.value(probe)
    if before is None or after is None:
        missing = reference if before is None else probe
        raise ValueError(f"sample {missing.sample_id} has no {measured.check.target} score")
    delta = after - before
    relation = measured.check.relation
    if relation == "drop":
        threshold = settings.drop_margin
        passed = delta <= -threshold + _EPSILON
    elif relation == "not_drop":
        threshold = settings.hold_tolerance
        passed = delta >= -threshold - _EPSILON
    elif relation == "hold":
        threshold = settings.hold_tolerance
        passed = abs(delta) <= threshold + _EPSILON
    else:
        raise ValueError(f"{relation!r} compares a set of scores, not a pair")
    return CheckResult(
        target=measured.check.target,
        expected=relation,
        measured_by=measured.measured_by,
        reference=before,
        probe=after,
        delta=round(delta, 6),
        threshold=threshold,
        passed=passed,
    )


def compare_spread(
    measured: MeasuredCheck, outcomes: list[SampleOutcome], settings: ProbeConfig
) -> CheckResult:
    """Whether the scores of clearly different outputs span at least the minimum spread.

    Raises ValueError when fewer than two of the outcomes have the score.
    """
    scores = [v for o in outcomes if (v := measured.value(o)) is not None]
    if len(scores) < 2:
        raise ValueError(f"only {len(scores)} of {len(outcomes)} outputs have a score")
    spread = max(scores) - min(scores)
    return CheckResult(
        target=measured.check.target,
        expected="not_tie",
        measured_by=measured.measured_by,
        scores=scores,
        spread=round(spread, 6),
        threshold=settings.min_spread,
        passed=spread >= settings.min_spread - _EPSILON,
    )
