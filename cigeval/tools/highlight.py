"""Highlight: dim everything outside some boxes so the judge looks inside them (paper §3.2).

The paper keeps the regions of interest as they are and scales every other pixel to a quarter
of its value. Here that quarter is the integer floor ``v // 4`` of each 8-bit channel value.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from PIL import Image

from cigeval.images import to_rgb
from cigeval.tools.base import Box
from cigeval.tools.boxes import box_to_pixel_slice

#: Pixels outside every highlighted box keep ``1 / DIM_FACTOR`` of their value.
DIM_FACTOR = 4

#: Boxes covering at least this share of an image leave too little outside them to dim:
#: the tools then show the image undimmed and do not ask the judge to focus on the boxes.
NEARLY_WHOLE_IMAGE = 0.9


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


def coverage(image: Image.Image, boxes: Iterable[Box]) -> float:
    """The share of ``image``'s pixels inside at least one of ``boxes`` (0 to 1)."""
    return float(highlight_mask(image.width, image.height, boxes).mean())


def nearly_whole(image: Image.Image, boxes: Iterable[Box]) -> bool:
    """Whether ``boxes`` cover so much of ``image`` (``NEARLY_WHOLE_IMAGE``) that dimming the
    rest would point at nothing in particular."""
    return coverage(image, boxes) >= NEARLY_WHOLE_IMAGE
