"""Planted edits: add, remove, recolour, move, resize and replace texture, each with its mask.

An :class:`EditDraft` holds a scene being edited. :meth:`EditDraft.plant` makes one edit of a
given kind on an object no earlier edit touched, away from every earlier edit's mask, and
returns a :class:`PlantedEdit`: the instruction asking for it, the phrase naming its object
(a detector's query), and its mask, the pixels any object involved covers before or after
(for a move or a resize, both places). Nothing outside the mask changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from cigeval.planted_edits.layout import fits, random_object
from cigeval.planted_edits.scene import (
    OBJECT_COLOURS,
    TEXTURE_WORDS,
    TEXTURES,
    Rect,
    Scene,
    SceneObject,
    footprint,
)

EditKind = Literal["add", "remove", "recolour", "move", "resize", "retexture"]
#: The kinds of edit, in the order the set draws them from.
EDIT_KINDS: tuple[EditKind, ...] = ("add", "remove", "recolour", "move", "resize", "retexture")
#: Space kept between two edits' masks, as a share of the picture's side, so each edit stays a
#: region of its own.
EDIT_SPACING = 0.05
_DIRECTIONS = {
    (-1, 0): "to the left",
    (1, 0): "to the right",
    (0, -1): "up",
    (0, 1): "down",
    (-1, -1): "up and to the left",
    (1, -1): "up and to the right",
    (-1, 1): "down and to the left",
    (1, 1): "down and to the right",
}


@dataclass(frozen=True, eq=False)
class PlantedEdit:
    """One planted change: its ``kind``, the ``instruction`` asking for it, the ``target``
    phrase naming its object (``the red circle``; ``a blue star`` for an added one) and its
    ``mask`` (bool, the picture's size: every pixel the change may touch)."""

    kind: EditKind
    instruction: str
    target: str
    mask: np.ndarray = field(repr=False)

    @property
    def box(self) -> tuple[int, int, int, int]:
        """The mask's bounding box, ``(x0, y0, x1, y1)`` in source pixels, ends exclusive
        (as Difference's boxes)."""
        rows, cols = np.flatnonzero(self.mask.any(axis=1)), np.flatnonzero(self.mask.any(axis=0))
        return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1

    @property
    def parts(self) -> tuple[tuple[int, int, int, int], ...]:
        """The boxes of the mask's separate regions, top to bottom: two for an object moved
        clear of where it was, else one (:attr:`box`)."""
        import cv2  # OpenCV loads on first use, keeping `import cigeval` light

        count, _, stats, _ = cv2.connectedComponentsWithStats(
            self.mask.astype(np.uint8), connectivity=8
        )
        boxes = [(int(x), int(y), int(x + w), int(y + h)) for x, y, w, h, _ in stats[1:count]]
        return tuple(sorted(boxes, key=lambda b: (b[1], b[0])))

    @property
    def area(self) -> int:
        """Pixels in the mask."""
        return int(self.mask.sum())

    def as_record(self) -> dict[str, object]:
        """The edit as JSON-ready data (the mask as its box and area)."""
        return {
            "kind": self.kind,
            "instruction": self.instruction,
            "target": self.target,
            "box": list(self.box),
            "parts": [list(part) for part in self.parts],
            "area": self.area,
        }


def _where(box: Rect, size: int) -> str:
    """Where a box sits in the picture, in words (``at the top left``, ``in the middle``)."""
    cx, cy = (box[0] + box[2]) / (2 * size), (box[1] + box[3]) / (2 * size)
    row = "top" if cy < 1 / 3 else "bottom" if cy > 2 / 3 else ""
    col = "left" if cx < 1 / 3 else "right" if cx > 2 / 3 else ""
    if not row and not col:
        return "in the middle"
    if row and col:
        return f"at the {row} {col}"
    return f"at the {row or col}"


class EditDraft:
    """A scene being edited: its objects (None where one was removed), the objects edits
    have touched, and the pixels edits have claimed (their masks, grown by a margin)."""

    def __init__(self, scene: Scene) -> None:
        self.base = scene
        self.size = scene.size
        self.objects: list[SceneObject | None] = list(scene.objects)
        self.touched: set[int] = set()
        self.claimed = np.zeros((scene.size, scene.size), bool)

    def scene(self) -> Scene:
        """The scene as edited so far."""
        kept = tuple(o for o in self.objects if o is not None)
        return replace(self.base, objects=kept)

    def _boxes(self, *, without: int | None = None) -> list[Rect]:
        return [o.box for i, o in enumerate(self.objects) if o is not None and i != without]

    def _mask(self, *objects: SceneObject) -> np.ndarray:
        mask = np.zeros((self.size, self.size), bool)
        for obj in objects:
            mask |= footprint(obj, self.size) > 0
        return mask

    def _free(self, mask: np.ndarray) -> bool:
        return not bool((mask & self.claimed).any())

    def _claim(self, mask: np.ndarray) -> None:
        import cv2  # OpenCV loads on first use, keeping `import cigeval` light

        grow = 2 * round(EDIT_SPACING * self.size) + 1
        grown = cv2.dilate(mask.astype(np.uint8), np.ones((grow, grow), np.uint8))
        self.claimed |= grown.astype(bool)

    def _candidates(self, rng: np.random.Generator) -> list[int]:
        """Objects no edit touched and no edit's claim reaches, in a random order."""
        free = [
            i
            for i, o in enumerate(self.objects)
            if o is not None and i not in self.touched and self._free(self._mask(o))
        ]
        return [free[i] for i in rng.permutation(len(free))]

    def plant(self, kind: EditKind, rng: np.random.Generator) -> PlantedEdit | None:
        """Make one edit of ``kind``; None when the scene offers no place for it."""
        if kind == "add":
            return self._add(rng)
        for index in self._candidates(rng):
            made = getattr(self, f"_{kind}")(index, rng)
            if made is not None:
                return made
        return None

    def _done(
        self, index: int | None, new: SceneObject | None, edit: PlantedEdit
    ) -> PlantedEdit | None:
        if not self._free(edit.mask) or not edit.mask.any():
            return None
        if index is None:
            self.objects.append(new)
            index = len(self.objects) - 1
        else:
            self.objects[index] = new
        self.touched.add(index)
        self._claim(edit.mask)
        return edit

    def _names(self) -> set[str]:
        return {o.phrase for o in self.objects if o is not None}

    def _add(self, rng: np.random.Generator) -> PlantedEdit | None:
        for _ in range(5):
            new = random_object(rng, self.size, self._boxes(), self._names())
            if new is None:
                continue
            target = f"a {new.phrase}"
            instruction = f"Add {target} {_where(new.box, self.size)}."
            made = self._done(None, new, PlantedEdit("add", instruction, target, self._mask(new)))
            if made is not None:
                return made
        return None

    def _remove(self, index: int, rng: np.random.Generator) -> PlantedEdit | None:
        obj = self.objects[index]
        assert obj is not None
        target = f"the {obj.phrase}"
        edit = PlantedEdit("remove", f"Remove {target}.", target, self._mask(obj))
        return self._done(index, None, edit)

    def _recolour(self, index: int, rng: np.random.Generator) -> PlantedEdit | None:
        obj = self.objects[index]
        assert obj is not None
        choices = [c for c in OBJECT_COLOURS if c not in (obj.colour, obj.pattern)]
        new = replace(obj, colour=choices[int(rng.integers(len(choices)))])
        if new.phrase in self._names():
            return None
        target = f"the {obj.phrase}"
        edit = PlantedEdit("recolour", f"Make {target} {new.colour}.", target, self._mask(obj))
        return self._done(index, new, edit)

    def _retexture(self, index: int, rng: np.random.Generator) -> PlantedEdit | None:
        obj = self.objects[index]
        assert obj is not None
        choices = [t for t in TEXTURES if t != obj.texture]
        new = replace(obj, texture=choices[int(rng.integers(len(choices)))])
        if new.phrase in self._names():
            return None
        target = f"the {obj.phrase}"
        if new.texture == "plain":
            instruction = f"Make {target} plain, without its pattern."
        else:
            instruction = f"Give {target} a {TEXTURE_WORDS[new.texture]} pattern instead."
        edit = PlantedEdit("retexture", instruction, target, self._mask(obj))
        return self._done(index, new, edit)

    def _placed(self, index: int, obj: SceneObject, box: Rect) -> SceneObject | None:
        """``obj`` (the object at ``index``) moved to ``box``; None when the box leaves the
        picture or comes nearer another object than the gap between objects."""
        if not fits(box, self.size, self._boxes(without=index)):
            return None
        return obj.moved_to(box)

    def _move(self, index: int, rng: np.random.Generator) -> PlantedEdit | None:
        obj = self.objects[index]
        assert obj is not None
        step = float(rng.uniform(0.5, 1.2)) * obj.side
        (dx, dy), words = list(_DIRECTIONS.items())[int(rng.integers(len(_DIRECTIONS)))]
        scale = step / math.hypot(dx, dy)
        box = (
            obj.box[0] + dx * scale,
            obj.box[1] + dy * scale,
            obj.box[2] + dx * scale,
            obj.box[3] + dy * scale,
        )
        new = self._placed(index, obj, box)
        if new is None:
            return None
        target = f"the {obj.phrase}"
        edit = PlantedEdit("move", f"Move {target} {words}.", target, self._mask(obj, new))
        return self._done(index, new, edit)

    def _resize(self, index: int, rng: np.random.Generator) -> PlantedEdit | None:
        obj = self.objects[index]
        assert obj is not None
        bigger = bool(rng.random() < 0.5)
        factor = float(rng.uniform(1.3, 1.6) if bigger else rng.uniform(0.55, 0.75))
        cx, cy = (obj.box[0] + obj.box[2]) / 2, (obj.box[1] + obj.box[3]) / 2
        half_w, half_h = (
            (obj.box[2] - obj.box[0]) * factor / 2,
            (obj.box[3] - obj.box[1]) * factor / 2,
        )
        box = (cx - half_w, cy - half_h, cx + half_w, cy + half_h)
        new = self._placed(index, obj, box)
        if new is None:
            return None
        target = f"the {obj.phrase}"
        words = "bigger" if bigger else "smaller"
        edit = PlantedEdit("resize", f"Make {target} {words}.", target, self._mask(obj, new))
        return self._done(index, new, edit)
