"""Drift: what changed between two probe reports of (nominally) the same judge.

An API model can change under the same name. Probe reports make that visible: the same
probe set is drawn byte for byte by the same cigeval version, so a probe whose fingerprint is
the same in both reports showed the judge exactly the same inputs, and any change in its
scores is the judge's. :func:`compare_reports` lists pass-rate changes (overall, by task, by
kind), probes that flipped between passed, failed and error, and the scores of identical
probes that moved by more than the tolerance (the hold tolerance unless given).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from cigeval.probes.report import ProbeReport, ProbeResult, SampleOutcome, Tally


class RateChange(BaseModel):
    """A pass rate in the old and the new report (None where nothing ran)."""

    old: float | None
    new: float | None

    @property
    def delta(self) -> float | None:
        """new - old, or None when either is missing."""
        return None if self.old is None or self.new is None else self.new - self.old


class StatusChange(BaseModel):
    """A probe whose status differs between the reports."""

    id: str
    old: str
    new: str
    identical_inputs: bool


class ScoreChange(BaseModel):
    """A score of an identical probe sample that moved by more than the tolerance."""

    sample_id: str
    target: str = Field(description="'score' or a sub-question id")
    fresh: bool = False
    old: float | None
    new: float | None
    delta: float | None


class Drift(BaseModel):
    """The differences between two probe reports; ``changed`` is True when a probe changed
    status or a score of an identical probe moved by more than ``tolerance``."""

    changed: bool
    tolerance: float
    old: dict[str, Any]
    new: dict[str, Any]
    notes: list[str] = Field(default_factory=list)
    pass_rate: RateChange
    by_task: dict[str, RateChange] = Field(default_factory=dict)
    by_kind: dict[str, RateChange] = Field(default_factory=dict)
    status_changes: list[StatusChange] = Field(default_factory=list)
    score_changes: list[ScoreChange] = Field(default_factory=list)
    scores_compared: int = 0
    max_score_change: float | None = None
    changed_inputs: list[str] = Field(default_factory=list, description="probes not comparable")
    only_old: list[str] = Field(default_factory=list)
    only_new: list[str] = Field(default_factory=list)


def _identity(report: ProbeReport) -> dict[str, Any]:
    return {
        "judge": report.judge,
        "rubric": report.rubric,
        "created_at": report.created_at,
        "cigeval_version": report.cigeval_version,
        "pass_rate": report.pass_rate,
    }


def _rates(old: dict[str, Tally], new: dict[str, Tally]) -> dict[str, RateChange]:
    return {
        name: RateChange(
            old=old[name].pass_rate if name in old else None,
            new=new[name].pass_rate if name in new else None,
        )
        for name in dict.fromkeys([*old, *new])
    }


def _outcomes(probe: ProbeResult) -> list[SampleOutcome]:
    found = [o for o in (probe.reference, probe.probe) if o is not None]
    return found + list(probe.samples)


def _scores(outcome: SampleOutcome) -> dict[str, float | None]:
    return {"score": outcome.score, **outcome.sub_scores}


def compare_reports(old: ProbeReport, new: ProbeReport, tolerance: float | None = None) -> Drift:
    """What changed from ``old`` to ``new``; ``tolerance`` (0-1 scale) defaults to the new
    report's hold tolerance."""
    if tolerance is None:
        tolerance = float(new.settings.get("hold_tolerance", 0.1))
    notes = []
    for field in ("judge", "rubric", "cigeval_version"):
        if getattr(old, field) != getattr(new, field):
            notes.append(f"{field} differs: {getattr(old, field)} -> {getattr(new, field)}")
    if old.settings != new.settings:
        notes.append(f"probe settings differ: {old.settings} -> {new.settings}")
    old_probes = {p.id: p for p in old.probes}
    new_probes = {p.id: p for p in new.probes}
    status_changes, changed_inputs = [], []
    pairs: dict[tuple[str, bool], tuple[SampleOutcome, SampleOutcome]] = {}
    for probe_id, after in new_probes.items():
        before = old_probes.get(probe_id)
        if before is None:
            continue
        identical = before.fingerprint == after.fingerprint
        if before.status != after.status:
            status_changes.append(
                StatusChange(
                    id=probe_id, old=before.status, new=after.status, identical_inputs=identical
                )
            )
        if not identical:
            changed_inputs.append(probe_id)
            continue
        old_by_key = {(o.sample_id, o.fresh): o for o in _outcomes(before)}
        for outcome in _outcomes(after):
            key = (outcome.sample_id, outcome.fresh)
            if key in old_by_key:
                pairs[key] = (old_by_key[key], outcome)
    score_changes, largest, compared = [], None, 0
    for (sample_id, fresh), (before_outcome, after_outcome) in pairs.items():
        before_scores, after_scores = _scores(before_outcome), _scores(after_outcome)
        for target in dict.fromkeys([*before_scores, *after_scores]):
            a, b = before_scores.get(target), after_scores.get(target)
            delta = None if a is None or b is None else b - a
            if delta is not None:
                compared += 1
                largest = abs(delta) if largest is None else max(largest, abs(delta))
            if (a is None) != (b is None) or (delta is not None and abs(delta) > tolerance + 1e-9):
                score_changes.append(
                    ScoreChange(
                        sample_id=sample_id,
                        target=target,
                        fresh=fresh,
                        old=a,
                        new=b,
                        delta=None if delta is None else round(delta, 6),
                    )
                )
    return Drift(
        changed=bool(status_changes or score_changes),
        tolerance=tolerance,
        old=_identity(old),
        new=_identity(new),
        notes=notes,
        pass_rate=RateChange(old=old.pass_rate, new=new.pass_rate),
        by_task=_rates(old.by_task, new.by_task),
        by_kind=_rates(old.by_kind, new.by_kind),
        status_changes=status_changes,
        score_changes=score_changes,
        scores_compared=compared,
        max_score_change=None if largest is None else round(largest, 6),
        changed_inputs=changed_inputs,
        only_old=[p for p in old_probes if p not in new_probes],
        only_new=[p for p in new_probes if p not in old_probes],
    )


#: How many flipped probes and moved scores the text lists (the JSON has them all).
_LISTED = 12


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render_drift(drift: Drift) -> str:
    """The drift as text: verdict, pass rates, flipped probes, moved scores."""
    verdict = "CHANGED" if drift.changed else "no change beyond the tolerance"
    lines = [
        f"Drift since {drift.old['created_at']} ({drift.old['judge']}): {verdict}",
        f"  pass rate {_rate(drift.pass_rate.old)} -> {_rate(drift.pass_rate.new)}",
    ]
    lines += [f"  note: {note}" for note in drift.notes]
    for title, rates in (("task", drift.by_task), ("kind", drift.by_kind)):
        moved = {n: r for n, r in rates.items() if r.old != r.new}
        for name, rate in moved.items():
            lines.append(f"  {title} {name}: {_rate(rate.old)} -> {_rate(rate.new)}")
    for change in drift.status_changes[:_LISTED]:
        lines.append(f"  probe {change.id}: {change.old} -> {change.new}")
    if len(drift.status_changes) > _LISTED:
        lines.append(f"  ... and {len(drift.status_changes) - _LISTED} more probe(s) (see JSON)")
    lines.append(
        f"  {drift.scores_compared} score(s) of identical probes compared; largest change "
        f"{'-' if drift.max_score_change is None else f'{drift.max_score_change:.2f}'}; "
        f"{len(drift.score_changes)} moved by more than {drift.tolerance}"
    )
    for score in drift.score_changes[:_LISTED]:
        again = " (asked again)" if score.fresh else ""
        old = "-" if score.old is None else f"{score.old:.2f}"
        new = "-" if score.new is None else f"{score.new:.2f}"
        lines.append(f"    {score.sample_id}{again} {score.target}: {old} -> {new}")
    if len(drift.score_changes) > _LISTED:
        lines.append(f"    ... and {len(drift.score_changes) - _LISTED} more score(s) (see JSON)")
    if drift.changed_inputs:
        lines.append(
            f"  {len(drift.changed_inputs)} probe(s) showed other inputs (not compared): "
            + ", ".join(drift.changed_inputs)
        )
    for title, ids in (
        ("only in the old report", drift.only_old),
        ("only in the new", drift.only_new),
    ):
        if ids:
            lines.append(f"  {title}: {', '.join(ids)}")
    return "\n".join(lines)
