"""Probe checks: which score a check reads, and the relations at their thresholds."""

from __future__ import annotations

import pytest

from cigeval.probes import Check, ProbeConfig
from cigeval.probes.checks import MeasuredCheck, compare_pair, compare_spread, measure_checks
from cigeval.probes.report import SampleOutcome


def outcome(score: float | None, **sub_scores: float) -> SampleOutcome:
    status = "ok" if score is not None else "error"
    return SampleOutcome(sample_id="s", status=status, score=score, sub_scores=sub_scores)


SETTINGS = ProbeConfig(drop_margin=0.1, hold_tolerance=0.1, min_spread=0.3)


def pair(relation: str, before: float, after: float) -> bool:
    measured = MeasuredCheck(Check("score", relation), "score")  # type: ignore[arg-type]
    return compare_pair(measured, outcome(before), outcome(after), SETTINGS).passed


def test_relations_at_their_thresholds() -> None:
    assert pair("drop", 0.9, 0.8)  # exactly the margin passes
    assert not pair("drop", 0.9, 0.85)
    assert not pair("drop", 0.5, 0.9)
    assert pair("hold", 0.7, 0.8) and pair("hold", 0.7, 0.6)
    assert not pair("hold", 0.7, 0.85) and not pair("hold", 0.7, 0.5)
    assert pair("not_drop", 0.9, 1.0) and pair("not_drop", 0.9, 0.8)
    assert not pair("not_drop", 0.9, 0.7)


def test_spread_needs_the_minimum_span_and_two_scores() -> None:
    measured = MeasuredCheck(Check("score", "not_tie"), "score")
    wide = compare_spread(measured, [outcome(0.9), outcome(0.0), outcome(0.6)], SETTINGS)
    assert wide.passed and wide.spread == pytest.approx(0.9)
    assert wide.scores == [0.9, 0.0, 0.6]
    narrow = compare_spread(measured, [outcome(0.7), outcome(0.6), outcome(0.7)], SETTINGS)
    assert not narrow.passed
    # failed samples have no score; the spread is over the others
    assert compare_spread(measured, [outcome(0.9), outcome(None), outcome(0.5)], SETTINGS).passed
    with pytest.raises(ValueError, match="only 1 of 2 outputs have a score"):
        compare_spread(measured, [outcome(0.9), outcome(None)], SETTINGS)


def test_sub_question_checks_read_sub_scores_or_a_focused_rubric_score() -> None:
    checks = (Check("edit_success", "drop"), Check("over_editing", "not_drop"))
    with_subs = measure_checks(checks, "cigeval", {"edit_success", "over_editing"})
    assert [m.measured_by for m in with_subs] == ["sub_score", "sub_score"]
    fidelity = measure_checks(checks, "instruction_fidelity", {"alignment", "completeness"})
    assert [(m.check.target, m.measured_by) for m in fidelity] == [("edit_success", "score")]
    preservation = measure_checks(checks, "Image Preservation", set())
    assert [(m.check.target, m.measured_by) for m in preservation] == [("over_editing", "score")]
    assert measure_checks(checks, "edit_quality", {"seamlessness"}) == []
    whole = measure_checks((Check("score", "drop"),), "anything", set())
    assert [m.measured_by for m in whole] == ["score"]
    measured = with_subs[0]
    before = outcome(0.9, edit_success=0.9, over_editing=0.8)
    after = outcome(0.0, edit_success=0.0, over_editing=1.0)
    result = compare_pair(measured, before, after, SETTINGS)
    assert result.passed and result.delta == pytest.approx(-0.9)
    with pytest.raises(ValueError, match="has no edit_success score"):
        compare_pair(measured, before, outcome(0.5), SETTINGS)
