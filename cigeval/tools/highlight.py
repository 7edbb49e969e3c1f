"""Highlight: dim everything outside some boxes so the judge looks inside them (paper §3.2).

The paper keeps the regions of interest as they are and scales every other pixel to a quarter
of its value. Here that quarter is the integer floor ``v // 4`` of each 8-bit channel value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from PIL import Image

from cigeval.images import to_rgb
from cigeval.tools.base import Box

#: Pixels outside every highlighted box keep ``1 / DIM_FACTOR`` of their value.
DIM_FACTOR = 4


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
    return Box(x0, y0, x1, y1, label=box.label, score=box.score)


def highlight_mask(width: int, height: int, boxes: Iterable[Box]) -> np.ndarray:
    """A boolean ``(height, width)`` array, True inside any of ``boxes`` (clipped)."""
    inside = np.zeros((height, width), dtype=bool)
    for box in boxes:
        span = box_to_pixel_slice(box, width, height)
        if span is not None:
            x0, y0, x1, y1 = span
            inside[y0:y1, x0:x1] = True
    return inside


def highlight(image: Image.Image, boxes: Iterable[Box]) -> Image.Image:
    """A copy of ``image`` with every pixel outside all ``boxes`` scaled to ``floor(v / 4)``.

    Pixels inside a box are untouched; boxes are clipped to the image. When no box covers any
    pixel (no boxes, or all outside the image) the image is returned unchanged: callers must
    then treat the result as "nothing highlighted" and not tell the judge to focus on it.
    The result is RGB (other modes are converted first, as everywhere in cigeval).
    """
    rgb = to_rgb(image)
    inside = highlight_mask(rgb.width, rgb.height, boxes)
    if not inside.any():
        return image
    pixels = np.asarray(rgb)
    dimmed = pixels // DIM_FACTOR
    dimmed[inside] = pixels[inside]
    return Image.fromarray(dimmed)


def any_highlight(image: Image.Image, boxes: Iterable[Box]) -> bool:
    """Whether :func:`highlight` would highlight anything for these boxes on this image."""
    return any(box_to_pixel_slice(b, image.width, image.height) is not None for b in boxes)
