"""How well a tool's boxes find the planted edits: the localisation figures.

A *locator* is any function from a :class:`~cigeval.planted_edits.PlantedPair` to the boxes
it found (:class:`Found`, in source pixels, and whether it said the whole image changed);
:func:`difference_locator` and :func:`grounding_locator` make one of cigeval's tools.
:func:`score_locator` runs it over pairs and counts (:class:`Localisation`):

- **edits found**: the share of requested edits (in ``edit`` and ``over_edit`` pairs) whose
  best box reaches IoU >= 0.5 with the edit's box (an object moved clear of where it was
  left two regions: boxing each of them with IoU >= 0.5 finds it too);
- **unedited marked**: the share of ``failed`` pairs (re-rendered, nothing edited) where the
  tool found any change, and the **false-alarm area**, the mean share of those pictures under
  its boxes;
- **over-editing F1**, over the ``edit`` and ``over_edit`` pairs: a pair is flagged when a box
  lies outside the instruction's target (less than half of its area within the requested
  edits' boxes grown by :data:`TARGET_MARGIN`), or the whole image changed;
- **failed-edit F1**, over the ``edit``, ``over_edit`` and ``failed`` pairs: a pair is flagged
  failed when no box lies within the target (and the whole image did not change);
- **whole image**: the share of ``regenerated`` pairs the tool called a whole-image change (a
  box over 90% of the picture counts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cigeval.planted_edits.edits import PlantedEdit
from cigeval.planted_edits.pairs import PlantedPair

if TYPE_CHECKING:
    from cigeval.tools.settings import DifferenceConfig, GroundingConfig

#: IoU a best box must reach for an edit to count as found.
IOU_FOUND = 0.5
#: The requested edits' boxes grow by this share of the picture's side before a box is judged
#: inside or outside the target (the editor's shift and blur move edges by a few pixels).
TARGET_MARGIN = 0.03
#: A box covering this share of the picture says the whole image changed.
WHOLE = 0.9
XYXY = tuple[float, float, float, float]


@dataclass(frozen=True)
class Found:
    """What a tool found in a pair: boxes ``(x0, y0, x1, y1)`` in source pixels, and whether
    it said the whole image changed."""

    boxes: tuple[XYXY, ...] = ()
    whole_image: bool = False


Locator = Callable[[PlantedPair], Found]


def iou(a: XYXY, b: XYXY) -> float:
    """Intersection over union of two boxes (0 when either is empty)."""
    inter = _overlap(a, b)
    union = _area(a) + _area(b) - inter
    return inter / union if union > 0 else 0.0


def _area(box: XYXY) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _overlap(a: XYXY, b: XYXY) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, width) * max(0.0, height)


def _covered(boxes: Iterable[XYXY], size: int) -> float:
    """The share of the picture under the union of ``boxes``."""
    import numpy as np

    canvas = np.zeros((size, size), bool)
    for x0, y0, x1, y1 in boxes:
        canvas[max(0, int(y0)) : max(0, round(y1)), max(0, int(x0)) : max(0, round(x1))] = True
    return float(canvas.mean())


@dataclass
class PairOutcome:
    """One pair scored: the best IoU of each requested and unrequested edit, the share of the
    picture under the boxes, and the flags."""

    id: str
    kind: str
    edit_kinds: list[str]
    best_iou: list[float]
    over_edit_iou: list[float]
    boxes: int
    covered: float
    whole_image: bool
    outside_target: bool
    inside_target: bool


def _inside(box: XYXY, targets: list[XYXY]) -> bool:
    """Whether at least half of ``box`` lies within the grown target boxes (their union,
    counted box by box: targets keep apart, so they do not overlap)."""
    area = _area(box)
    return area > 0 and sum(_overlap(box, t) for t in targets) >= 0.5 * area


def match(edit: PlantedEdit, boxes: list[XYXY]) -> float:
    """How well ``boxes`` find ``edit``: the best IoU with its box, or, when its mask is in
    separate parts (a move), with each part, whichever is higher."""
    whole = max((iou(b, edit.box) for b in boxes), default=0.0)
    parts = edit.parts
    if len(parts) < 2:
        return whole
    each = min(max((iou(b, part) for b in boxes), default=0.0) for part in parts)
    return max(whole, each)


def score_pair(pair: PlantedPair, found: Found) -> PairOutcome:
    """The figures of one pair from what the tool found in it."""
    size = pair.size
    boxes = list(found.boxes)
    if found.whole_image:
        boxes = [(0.0, 0.0, float(size), float(size))]
    grow = TARGET_MARGIN * size
    targets = [
        (e.box[0] - grow, e.box[1] - grow, e.box[2] + grow, e.box[3] + grow) for e in pair.edits
    ]
    covered = _covered(boxes, size)
    whole = found.whole_image or covered >= WHOLE
    return PairOutcome(
        id=pair.id,
        kind=pair.kind,
        edit_kinds=[e.kind for e in pair.edits],
        best_iou=[match(e, boxes) for e in pair.edits],
        over_edit_iou=[match(e, boxes) for e in pair.over_edits],
        boxes=len(boxes),
        covered=covered,
        whole_image=whole,
        outside_target=whole or any(not _inside(b, targets) for b in boxes),
        inside_target=whole or any(_inside(b, targets) for b in boxes),
    )


@dataclass(frozen=True)
class Detection:
    """A yes/no flag against the truth: counts, precision, recall, F1."""

    true_pos: int
    false_pos: int
    false_neg: int
    true_neg: int

    @property
    def precision(self) -> float:
        """Flagged pairs that were truly positive."""
        flagged = self.true_pos + self.false_pos
        return self.true_pos / flagged if flagged else 0.0

    @property
    def recall(self) -> float:
        """Positive pairs that were flagged."""
        positive = self.true_pos + self.false_neg
        return self.true_pos / positive if positive else 0.0

    @property
    def f1(self) -> float:
        """The harmonic mean of precision and recall."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def _detection(pairs: list[tuple[bool, bool]]) -> Detection:
    """``(truth, flagged)`` pairs counted."""
    return Detection(
        true_pos=sum(t and f for t, f in pairs),
        false_pos=sum(f and not t for t, f in pairs),
        false_neg=sum(t and not f for t, f in pairs),
        true_neg=sum(not t and not f for t, f in pairs),
    )


def _share(values: list[bool]) -> float:
    return sum(values) / len(values) if values else float("nan")


@dataclass
class Localisation:
    """The localisation figures of one tool over a set of pairs (see the module notes)."""

    outcomes: list[PairOutcome] = field(repr=False)

    def _of(self, *kinds: str) -> list[PairOutcome]:
        return [o for o in self.outcomes if o.kind in kinds]

    @property
    def edits_found(self) -> float:
        """Share of requested edits (edit and over_edit pairs) whose best box has IoU >= 0.5."""
        return _share([v >= IOU_FOUND for o in self._of("edit", "over_edit") for v in o.best_iou])

    def edits_found_by_kind(self) -> dict[str, tuple[float, int]]:
        """:attr:`edits_found` per kind of edit, with the number of edits."""
        by_kind: dict[str, list[bool]] = {}
        for o in self._of("edit", "over_edit"):
            for kind, value in zip(o.edit_kinds, o.best_iou, strict=True):
                by_kind.setdefault(kind, []).append(value >= IOU_FOUND)
        return {k: (_share(v), len(v)) for k, v in sorted(by_kind.items())}

    @property
    def requested_edits(self) -> int:
        """Requested edits counted by :attr:`edits_found`."""
        return sum(len(o.best_iou) for o in self._of("edit", "over_edit"))

    @property
    def over_edits_found(self) -> float:
        """Share of unrequested changes whose best box has IoU >= 0.5."""
        return _share([v >= IOU_FOUND for o in self._of("over_edit") for v in o.over_edit_iou])

    @property
    def unedited_marked(self) -> float:
        """Share of failed (unedited, re-rendered) pairs where any change was found."""
        return _share([o.boxes > 0 for o in self._of("failed")])

    @property
    def false_alarm_area(self) -> float:
        """Mean share of the picture under the boxes on failed pairs."""
        failed = self._of("failed")
        return sum(o.covered for o in failed) / len(failed) if failed else float("nan")

    @property
    def over_editing(self) -> Detection:
        """Over-editing flagged (a box outside the target) against the truth, over the edit
        and over_edit pairs."""
        return _detection(
            [(o.kind == "over_edit", o.outside_target) for o in self._of("edit", "over_edit")]
        )

    @property
    def failed_edits(self) -> Detection:
        """A failed edit flagged (no box within the target) against the truth, over the edit,
        over_edit and failed pairs."""
        return _detection(
            [
                (o.kind == "failed", not o.inside_target)
                for o in self._of("edit", "over_edit", "failed")
            ]
        )

    @property
    def whole_image_found(self) -> float:
        """Share of regenerated pairs the tool called a whole-image change."""
        return _share([o.whole_image for o in self._of("regenerated")])

    def summary(self) -> dict[str, float]:
        """The headline figures by name."""
        return {
            "edits_found": self.edits_found,
            "over_edits_found": self.over_edits_found,
            "unedited_marked": self.unedited_marked,
            "false_alarm_area": self.false_alarm_area,
            "over_editing_f1": self.over_editing.f1,
            "over_editing_precision": self.over_editing.precision,
            "over_editing_recall": self.over_editing.recall,
            "failed_edit_f1": self.failed_edits.f1,
            "whole_image_found": self.whole_image_found,
        }


def score_locator(pairs: Iterable[PlantedPair], locate: Locator) -> Localisation:
    """Run ``locate`` on each pair and count the localisation figures."""
    return Localisation([score_pair(pair, locate(pair)) for pair in pairs])


def difference_locator(config: DifferenceConfig) -> Locator:
    """The Difference tool's regions (source against edited, no mask) as a locator."""
    import numpy as np

    from cigeval.tools.difference import compare_arrays

    def locate(pair: PlantedPair) -> Found:
        report = compare_arrays(np.asarray(pair.source), np.asarray(pair.edited), config=config)
        boxes = tuple((b.x0, b.y0, b.x1, b.y1) for b in report.regions)
        return Found(boxes, whole_image=report.whole_image_changed)

    return locate


def grounding_locator(config: GroundingConfig) -> Locator:
    """Grounding as a locator: each requested edit's target phrase looked for with the
    detector of ``config``, in the source (in the edited picture for an added object, which
    only it shows); the boxes Grounding would highlight (``config.boxes``). Grounding finds
    the named object, not a change: a failed edit's object is found all the same."""
    from cigeval.tools.grounding import GroundingDinoDetector, select_boxes

    detector = GroundingDinoDetector.from_config(config)

    def locate(pair: PlantedPair) -> Found:
        boxes: list[XYXY] = []
        for edit in pair.edits:
            image = pair.edited if edit.kind == "add" else pair.source
            for box in select_boxes(detector.detect(image, edit.target), config):
                boxes.append((box.x0, box.y0, box.x1, box.y1))
        return Found(tuple(boxes))

    return locate
