"""Box geometry shared by the tools: clipping, scaling, pixel spans and merging."""

from __future__ import annotations

import math
from dataclasses import replace

from cigeval.tools.base import Box


def box_to_pixel_slice(box: Box, width: int, height: int) -> tuple[int, int, int, int] | None:
    """The integer pixel span ``(x0, y0, x1, y1)`` (end exclusive) a box covers in an image.

    A pixel counts as inside when the box covers any part of it, so fractional coordinates
    round outwards. The span is clipped to the image; ``None`` when nothing of it remains.
    """
    x0 = max(0, math.floor(min(box.x0, box.x1)))
    y0 = max(0, math.floor(min(box.y0, box.y1)))
    x1 = min(width, math.ceil(max(box.x0, box.x1)))
    y1 = min(height, math.ceil(max(box.y0, box.y1)))
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1, y1


def clip_box(box: Box, width: int, height: int) -> Box | None:
    """``box`` clipped to a ``width`` x ``height`` image, or ``None`` if it lies outside."""
    x0 = min(max(min(box.x0, box.x1), 0.0), float(width))
    y0 = min(max(min(box.y0, box.y1), 0.0), float(height))
    x1 = min(max(max(box.x0, box.x1), 0.0), float(width))
    y1 = min(max(max(box.y0, box.y1), 0.0), float(height))
    if x1 <= x0 or y1 <= y0:
        return None
    return replace(box, x0=x0, y0=y0, x1=x1, y1=y1)


def scale_box(box: Box, sx: float, sy: float) -> Box:
    """``box`` with x coordinates multiplied by ``sx`` and y coordinates by ``sy``."""
    return replace(box, x0=box.x0 * sx, y0=box.y0 * sy, x1=box.x1 * sx, y1=box.y1 * sy)


def merge_boxes(boxes: list[Box]) -> list[Box]:
    """Merge boxes that overlap or touch, transitively, until no two of them do.

    A merged box can reach a third box that neither of its parts touched, so grouping runs
    again on the merged boxes until a pass changes nothing. Labels of merged boxes are kept
    when they agree; scores are dropped.
    """
    current = list(boxes)
    while True:
        groups = _touching_groups(current)
        if len(groups) == len(current):
            return current
        current = [union_box([current[i] for i in group]) for group in groups]


def _touching_groups(boxes: list[Box]) -> list[list[int]]:
    """Indices of ``boxes`` grouped by the transitive closure of "touches" (union-find)."""
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Sweep in x order: once a box starts right of box i's end, no later one can touch it.
    order = sorted(range(len(boxes)), key=lambda k: boxes[k].x0)
    for rank, i in enumerate(order):
        for j in order[rank + 1 :]:
            if boxes[j].x0 > boxes[i].x1:
                break
            if _touch(boxes[i], boxes[j]):
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(boxes)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _touch(a: Box, b: Box) -> bool:
    # Boxes are end-exclusive pixel spans, so x1 == other.x0 means adjacent pixels: touching.
    return a.x0 <= b.x1 and b.x0 <= a.x1 and a.y0 <= b.y1 and b.y0 <= a.y1


def union_box(group: list[Box]) -> Box:
    """The smallest box holding every box of ``group`` (one box: itself). Its label is
    theirs when they agree; its score is dropped."""
    if len(group) == 1:
        return group[0]
    labels = {b.label for b in group}
    return Box(
        min(b.x0 for b in group),
        min(b.y0 for b in group),
        max(b.x1 for b in group),
        max(b.y1 for b in group),
        label=labels.pop() if len(labels) == 1 else None,
    )
