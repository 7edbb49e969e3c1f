"""The official code's way from a change map to boxes (``DifferenceConfig(steps="official")``).

The official CIGEval code (HITsz-TMG/Agentic-CIGEval, ``tools/diff.py``, its "MaskFocus")
boxes every contour of the dilated change map (holes included), keeps boxes larger than a
share of the image, runs one merge pass over them and keeps the largest. Its merge pass has
two quirks, reproduced here because the paper's numbers were made with them:

- when a box absorbs another, its new width and height are measured from its *new* left and
  top edges, so a box that grows leftwards or upwards loses as much on its right or bottom;
- the pass stops at the first box that absorbed nothing, and the boxes after it are dropped.

Boxes here are ``(x, y, w, h)`` tuples as OpenCV's ``boundingRect`` gives them.
"""

from __future__ import annotations

import numpy as np

Rect = tuple[int, int, int, int]


def contour_rects(binary: np.ndarray) -> list[Rect]:
    """The bounding box of every contour of a 0/255 ``binary`` map, holes included, in the
    order OpenCV's contour tree lists them."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    contours, _ = cv2.findContours(binary, cv2.RETR_TREE, cv2.CHAIN_APPROX_SIMPLE)
    return [tuple(int(v) for v in cv2.boundingRect(c)) for c in contours]  # type: ignore[misc]


def _overlap(a: Rect, b: Rect) -> bool:
    """Whether two boxes share area (touching edges do not count)."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


def official_merge_pass(rects: list[Rect]) -> list[Rect]:
    """One merge pass as the official code runs it, quirks included (see the module notes).

    Each box in turn is taken off the front of the list and absorbs every later box it
    overlaps at that moment (its edges updated after each absorption); the result is kept.
    The pass ends when the list is empty or when a box absorbed nothing.
    """
    pending = list(rects)
    kept: list[Rect] = []
    while pending:
        x, y, w, h = pending.pop(0)
        absorbed = False
        for other in tuple(pending):
            if not _overlap((x, y, w, h), other):
                continue
            ox, oy, ow, oh = other
            x, y = min(x, ox), min(y, oy)
            # Width and height from the new corner, as the official code computes them.
            w = max(x + w, ox + ow) - x
            h = max(y + h, oy + oh) - y
            pending.remove(other)
            absorbed = True
        kept.append((x, y, w, h))
        if not absorbed:
            break
    return kept


def largest_first(rects: list[Rect], keep: int) -> list[Rect]:
    """The ``keep`` boxes of largest area, ties in their original order."""
    return sorted(rects, key=lambda r: r[2] * r[3], reverse=True)[:keep]
