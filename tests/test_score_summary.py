"""``print(score)``: a few readable lines, not the whole record (issue 24, item 3)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

import cigeval
from cigeval.score import Score, SubScore
from cigeval.testing import rule_judge


def _evaluated(tmp_path: Path) -> Score:
    for name, colour in (("src.png", "blue"), ("out.png", "red")):
        Image.new("RGB", (32, 32), colour).save(tmp_path / name)
    judge = cigeval.ScriptedBackend(
        rule_judge(
            scores={"edit_success": 8, "over_editing": 6}, tools={"over_editing": "Difference"}
        )
    )
    # tool_use="any": Difference runs in text-guided editing too (the paper: mask-guided only)
    evaluator = cigeval.Evaluator(
        judge, run_config=cigeval.RunConfig(use_cache=False, preflight=False), tool_use="any"
    )
    return evaluator.evaluate(
        {
            "id": "car-1",
            "task": "text_guided_ie",
            "instruction": "make the car red",
            "images": {"source": str(tmp_path / "src.png"), "output": str(tmp_path / "out.png")},
        }
    )


def test_a_judged_sample_prints_as_a_short_summary(tmp_path: Path) -> None:
    score = _evaluated(tmp_path)
    assert score.ok and score.trace.events  # the record holds the whole trace ...
    assert str(score).splitlines() == [  # ... the summary does not
        "Score 'car-1' (text_guided_ie): ok, 0.6",
        "  edit_success: 8/10 without a tool",
        "  over_editing: 6/10 via Difference",
        "  judge: scripted:default; 3 model call(s)",
    ]
    assert repr(score) == str(score) == score.summary()
    assert len(repr(score)) < 300 < len(str(score.to_record()))


def test_reasoning_is_shown_on_request(tmp_path: Path) -> None:
    lines = _evaluated(tmp_path).summary(reasoning=True).splitlines()
    assert lines[1:5] == [
        "  edit_success: 8/10 without a tool",
        "      judged edit_success",
        "  over_editing: 6/10 via Difference",
        "      judged over_editing",
    ]


def test_degraded_sub_questions_errors_and_dimensions_are_named() -> None:
    score = Score(
        id="s1",
        task="subject_driven_ie",
        rubric="cigeval",
        status="error",
        value=None,
        error="background_preservation: ParseError: no usable reply after 3 attempt(s)",
        sub_scores=[
            SubScore(
                question_id="subject_similarity",
                question="q",
                score=4,
                tool=None,
                degraded=True,
                note="the tool 'Grounding' failed: weights not found; judged without it",
            ),
            SubScore(
                question_id="background_preservation",
                question="q",
                score=None,
                tool="Difference",
                error="ParseError: no usable reply after 3 attempt(s)",
            ),
        ],
    )
    assert str(score).splitlines() == [
        "Score 's1' (subject_driven_ie): error in 1 sub-question(s)",
        "  subject_similarity: 4/10 without a tool [degraded: the tool 'Grounding' failed: "
        "weights not found; judged without it]",
        "  background_preservation: no score via Difference; error: ParseError: no usable "
        "reply after 3 attempt(s)",
    ]
    other = Score(
        id="v",
        task="text_guided_ie",
        rubric="viescore",
        status="ok",
        value=0.55,
        dimensions={"SC": 0.5, "PQ": 0.6, "O": None},
    )
    assert str(other).splitlines() == [
        "Score 'v' (text_guided_ie, rubric viescore): ok, 0.55",
        "  dimensions: SC 0.5, PQ 0.6, O -",
    ]


def test_a_long_error_is_cut_to_one_line() -> None:
    score = Score(id="x", task="text_guided_ig", status="error", error="bad\n" + "y" * 5000)
    (line,) = str(score).splitlines()
    assert line.startswith("Score 'x' (text_guided_ig): error: bad yyy") and line.endswith("…")
    assert len(line) < 300
