"""Evidence as data: every sub-score of a judged sample records the regions its tools found,
in the pixels of the image each belongs to, for every task under both methods; records keep
them through to_record/from_record, and records written before evidence existed still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cigeval import Evaluator, RunConfig, Score
from cigeval.backends import ScriptedBackend
from cigeval.sample import sample_from_dict
from cigeval.score import Evidence, SubScore
from cigeval.tasks import TASK_IDS, get_task
from cigeval.testing import rule_judge
from cigeval.tools import Box, GroundingTool
from cigeval.tools.registry import TOOLS
from cigeval.trace import ObservationEvent
from tests.judge_view import expected_size, fidelity_samples

NO_CACHE = RunConfig(use_cache=False, preflight=False)
METHODS = ("paper", "extended")
#: Difference where a question compares the source with the output, Grounding elsewhere.
PLAN = {"*": "Grounding", "over_editing": "Difference", "background_preservation": "Difference"}


class QuarterDetector:
    """A stand-in GroundingDINO finding one box, the second quarter of the image it is given
    (whole pixels, so the paper's whole-pixel selection keeps it as it is)."""

    def cache_key(self, image_sha256: str, query: str) -> str:
        return f"quarter:{image_sha256}:{query}"

    def detect(self, image: Image.Image, query: str) -> list[Box]:
        w, h = image.size
        return [Box(w // 4, h // 4, w // 2, h // 2, label="thing", score=0.875)]


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("evidence")
    return folder, fidelity_samples(folder)


def _judged(folder: Path, task: str, fields: dict[str, Any], method: str) -> Score:
    sample = sample_from_dict({"id": task, "task": task, **fields}, base_dir=folder)
    with TOOLS.scoped():
        TOOLS.register("Grounding", GroundingTool(detector=QuarterDetector()), replace=True)  # type: ignore[arg-type]
        evaluator = Evaluator(
            ScriptedBackend(rule_judge(tools=PLAN)),
            run_config=NO_CACHE,
            tools=("Grounding", "Difference"),
            method=method,
        )
        score = evaluator.evaluate(sample)
    assert score.status == "ok", score.error
    return score


def _observed(score: Score, question_id: str) -> list[tuple[str, list[float]]]:
    """(role, box) of every region the trace's observations of one sub-question list."""
    return [
        (role, box)
        for event in score.trace.events
        if isinstance(event, ObservationEvent) and event.question_id == question_id
        for role, boxes in event.boxes.items()
        for box in boxes
    ]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("task", TASK_IDS)
def test_every_sub_score_records_the_regions_its_tools_found(samples, task: str, method: str):
    folder, by_task = samples
    score = _judged(folder, task, by_task[task], method)
    record = json.loads(json.dumps(score.to_record()))
    assert all("evidence" in sub for sub in record["sub_scores"])
    spec = get_task(task)
    assert [s.question_id for s in score.sub_scores] == [q.id for q in spec.sub_questions]
    with_regions = 0
    for sub in score.sub_scores:
        question = next(q for q in spec.sub_questions if q.id == sub.question_id)
        shown = [role for role in question.image_roles if role != "mask"]
        found = [(e.role, list(e.box)) for e in sub.evidence]
        assert found == _observed(score, sub.question_id), sub.question_id
        for entry in sub.evidence:  # in the image's own frame, which is that image's size
            assert entry.image_size == expected_size(entry.role), (sub.question_id, entry)
            width, height = entry.image_size
            x0, y0, x1, y1 = entry.box
            assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height
            assert entry.round == 1 and entry.tool == sub.tool
        if sub.tool is None:  # the method runs no Difference here: nothing was found
            assert sub.evidence == [] and sub.degraded, sub.question_id
            continue
        with_regions += 1
        if sub.tool == "Grounding":
            expected = []
            for role in shown:
                w, h = expected_size(role)
                expected.append((role, [w // 4, h // 4, w // 2, h // 2]))
            assert found == expected, sub.question_id
            assert {e.confidence for e in sub.evidence} == {0.875}
            assert {e.label for e in sub.evidence} == {"thing"}
        else:
            _check_difference(sub, shown)
    assert with_regions >= 1  # every task has a question whose tool runs under both methods


def _check_difference(sub: SubScore, shown: list[str]) -> None:
    """The right half changed (gray to red): on each image, in that image's own pixels, the
    changed region is its right half, though the output is larger than the source."""
    source, output = shown
    by_role = {role: [e for e in sub.evidence if e.role == role] for role in shown}
    assert by_role[source] and len(by_role[source]) == len(by_role[output]), sub.evidence
    sx = expected_size(output)[0] / expected_size(source)[0]
    sy = expected_size(output)[1] / expected_size(source)[1]
    for on_source, on_output in zip(by_role[source], by_role[output], strict=True):
        assert on_source.label == on_output.label
        x0, y0, x1, y1 = on_source.box
        assert on_output.box == pytest.approx((x0 * sx, y0 * sy, x1 * sx, y1 * sy), abs=0.01)
    for role in shown:
        w, h = expected_size(role)
        x0, y0, x1, y1 = by_role[role][0].box
        assert abs(x0 - w / 2) <= 0.1 * w and x1 == pytest.approx(w), (role, by_role[role][0])
        assert y0 == 0 and y1 == pytest.approx(h)


def test_evidence_round_trips_through_records_and_old_records_still_read():
    entry = Evidence(
        box=(1.5, 2, 30, 40), label="red car", tool="Grounding", role="output",
        image_size=(64, 48), confidence=0.5,
    )  # fmt: skip
    sub = SubScore(question_id="q", question="Q?", score=7, evidence=[entry])
    score = Score(id="s", task="text_guided_ig", status="ok", value=0.7, sub_scores=[sub])
    record = json.loads(json.dumps(score.to_record()))
    assert record["sub_scores"][0]["evidence"] == [
        {
            "box": [1.5, 2.0, 30.0, 40.0],
            "label": "red car",
            "tool": "Grounding",
            "role": "output",
            "image_size": [64, 48],
            "round": 1,
            "confidence": 0.5,
        }
    ]
    assert Score.from_record(record).sub_scores[0].evidence == [entry]
    del record["sub_scores"][0]["evidence"]  # a record written before evidence existed
    assert Score.from_record(record).sub_scores[0].evidence == []


def test_a_box_that_is_not_a_box_is_refused():
    with pytest.raises(ValueError, match="x0 <= x1"):
        Evidence(box=(10, 0, 5, 4), label="x", tool="T", role="output")
