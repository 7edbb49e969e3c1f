"""Random scenes for the planted-edit set: a backdrop and three to seven objects that do not
touch, each named uniquely by its texture, colour and shape (so an instruction's phrase picks
one object)."""

from __future__ import annotations

import math

import numpy as np

from cigeval.planted_edits.scene import (
    BACKDROPS,
    OBJECT_COLOURS,
    OBJECT_KINDS,
    TEXTURES,
    Backdrop,
    Rect,
    Scene,
    SceneObject,
)

#: Object sides as shares of the picture's side (drawn log-uniformly between them).
SIDE_RANGE = (0.09, 0.28)
#: Space kept between objects, as a share of the picture's side.
GAP = 0.03
#: Attempts at finding a free place for an object before giving up on it.
_TRIES = 60


def overlaps(a: Rect, b: Rect, gap: float = 0.0) -> bool:
    """Whether boxes ``a`` and ``b`` come closer than ``gap`` pixels."""
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def inside(box: Rect, size: int, margin: float) -> bool:
    """Whether ``box`` lies in the picture at least ``margin`` pixels from its edges."""
    return (
        box[0] >= margin
        and box[1] >= margin
        and box[2] <= size - margin
        and box[3] <= size - margin
    )


def fits(box: Rect, size: int, taken: list[Rect]) -> bool:
    """Whether ``box`` lies in the picture (2% of its side from the edges) and keeps
    :data:`GAP` from every box of ``taken``."""
    gap, margin = GAP * size, 0.02 * size
    return inside(box, size, margin) and not any(overlaps(box, t, gap) for t in taken)


def box_shape(rng: np.random.Generator, kind: str, side: float) -> tuple[float, float]:
    """Width and height of an object of ``kind`` whose larger side is ``side``."""
    if kind != "rectangle":
        return side, side
    short = side / float(rng.uniform(1.4, 2.0))
    return (side, short) if rng.random() < 0.5 else (short, side)


def random_side(rng: np.random.Generator, size: int) -> float:
    """An object's larger side, log-uniform in :data:`SIDE_RANGE` of the picture."""
    low, high = (math.log(v * size) for v in SIDE_RANGE)
    return math.exp(float(rng.uniform(low, high)))


def free_box(
    rng: np.random.Generator, size: int, width: float, height: float, taken: list[Rect]
) -> Rect | None:
    """A box of ``width`` x ``height`` anywhere in the picture that :func:`fits` among the
    boxes of ``taken``."""
    margin = 0.02 * size
    for _ in range(_TRIES):
        cx = float(rng.uniform(width / 2 + margin, size - width / 2 - margin))
        cy = float(rng.uniform(height / 2 + margin, size - height / 2 - margin))
        box = (cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2)
        if fits(box, size, taken):
            return box
    return None


def random_object(
    rng: np.random.Generator, size: int, taken: list[Rect], named: set[str]
) -> SceneObject | None:
    """A new object in a free place, whose phrase is not in ``named``; None if none fits."""
    for _ in range(10):
        kind = OBJECT_KINDS[int(rng.integers(len(OBJECT_KINDS)))]
        colour = OBJECT_COLOURS[int(rng.integers(len(OBJECT_COLOURS)))]
        texture = TEXTURES[0] if rng.random() < 0.4 else TEXTURES[int(rng.integers(1, 5))]
        others = [c for c in OBJECT_COLOURS if c != colour]
        pattern = others[int(rng.integers(len(others)))]
        width, height = box_shape(rng, kind, random_side(rng, size))
        box = free_box(rng, size, width, height, taken)
        seed = int(rng.integers(2**31))
        candidate = SceneObject(kind, (0, 0, 0, 0), colour, texture, pattern, seed)
        if box is not None and candidate.phrase not in named:
            return candidate.moved_to(box)
    return None


def random_scene(rng: np.random.Generator, size: int) -> Scene:
    """A backdrop and three to seven objects (fewer when they do not fit)."""
    wall, floor = BACKDROPS[int(rng.integers(len(BACKDROPS)))]
    backdrop = Backdrop(
        wall=wall,
        floor=floor,
        horizon=float(rng.uniform(0.5, 0.75)),
        planks=bool(rng.random() < 0.5),
        grain=float(rng.uniform(1.0, 4.0)),
        seed=int(rng.integers(2**31)),
    )
    objects: list[SceneObject] = []
    for _ in range(int(rng.integers(3, 8))):
        obj = random_object(rng, size, [o.box for o in objects], {o.phrase for o in objects})
        if obj is not None:
            objects.append(obj)
    return Scene(size, backdrop, tuple(objects))
