"""The localisation figures: IoU, a moved object's two places, the flags and their F1."""

from __future__ import annotations

import numpy as np
import pytest

from cigeval.planted_edits import PlantedEdit, PlantedPair, planted_pair
from cigeval.planted_edits.scoring import (
    Detection,
    Found,
    Localisation,
    iou,
    match,
    score_locator,
    score_pair,
)

SIZE = 128


def _edit(*rects: tuple[int, int, int, int], kind: str = "recolour") -> PlantedEdit:
    mask = np.zeros((SIZE, SIZE), bool)
    for x0, y0, x1, y1 in rects:
        mask[y0:y1, x0:x1] = True
    return PlantedEdit(kind, "Make it blue.", "the red square", mask)  # type: ignore[arg-type]


def test_iou_of_known_boxes() -> None:
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)
    assert iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    assert iou((0, 0, 0, 10), (0, 0, 0, 10)) == 0.0


def test_a_moved_object_is_found_by_its_two_places_or_their_box() -> None:
    moved = _edit((10, 10, 30, 30), (70, 10, 90, 30), kind="move")
    assert moved.parts == ((10, 10, 30, 30), (70, 10, 90, 30))
    assert moved.box == (10, 10, 90, 30)
    assert match(moved, [(10, 10, 30, 30), (70, 10, 90, 30)]) == 1.0
    assert match(moved, [(10, 10, 90, 30)]) == 1.0
    assert match(moved, [(10, 10, 30, 30)]) < 0.5  # one place only: not found


def test_detection_counts() -> None:
    detection = Detection(true_pos=8, false_pos=2, false_neg=0, true_neg=10)
    assert (detection.precision, detection.recall) == (0.8, 1.0)
    assert detection.f1 == pytest.approx(2 * 0.8 / 1.8)
    assert Detection(0, 0, 0, 5).f1 == 0.0


@pytest.fixture(scope="module")
def pairs() -> list[PlantedPair]:
    # the first twelve pairs of seed 13 hold every kind of pair
    return [planted_pair(13, index, size=SIZE) for index in range(12)]


def _oracle(pair: PlantedPair) -> Found:
    """What a perfect change finder returns: the changes made, nothing else."""
    if pair.whole_image:
        return Found((), whole_image=True)
    made = () if pair.failed else pair.edits
    return Found(tuple(tuple(map(float, p)) for e in made + pair.over_edits for p in e.parts))


def test_a_perfect_change_finder_scores_perfectly(pairs: list[PlantedPair]) -> None:
    figures = score_locator(pairs, _oracle)
    assert figures.edits_found == 1.0 and figures.over_edits_found == 1.0
    assert figures.unedited_marked == 0.0 and figures.false_alarm_area == 0.0
    assert figures.over_editing.f1 == 1.0 and figures.failed_edits.f1 == 1.0
    assert figures.whole_image_found == 1.0
    assert figures.requested_edits == sum(
        len(p.edits) for p in pairs if p.kind in ("edit", "over_edit")
    )


def test_a_finder_that_marks_everything_is_told_apart(pairs: list[PlantedPair]) -> None:
    everything = score_locator(pairs, lambda pair: Found(((0.0, 0.0, SIZE, SIZE),)))
    assert everything.unedited_marked == 1.0 and everything.false_alarm_area == 1.0
    assert everything.over_editing.recall == 1.0 and everything.over_editing.precision < 0.5
    assert everything.failed_edits.recall == 0.0  # a whole-image change is no failed edit
    nothing = score_locator(pairs, lambda pair: Found())
    assert nothing.edits_found == 0.0 and nothing.unedited_marked == 0.0
    assert nothing.failed_edits.recall == 1.0 and nothing.over_editing.f1 == 0.0


def test_a_box_outside_the_target_flags_over_editing(pairs: list[PlantedPair]) -> None:
    pair = next(p for p in pairs if p.kind == "edit")
    inside = tuple(map(float, pair.edits[0].box))
    far = (0.0, 0.0, 4.0, 4.0) if pair.edits[0].box[0] > 20 else (120.0, 120.0, 128.0, 128.0)
    assert not score_pair(pair, Found((inside,))).outside_target
    flagged = score_pair(pair, Found((inside, far)))
    assert flagged.outside_target and flagged.inside_target
    assert Localisation([flagged]).over_editing.false_pos == 1
