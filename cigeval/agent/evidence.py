"""A sub-score's evidence: the regions its tools found, as records in each image's pixels.

A tool returns its regions by image role (``ToolResult.boxes``), in the pixels of the image
the sample gave for that role. Each becomes an :class:`~cigeval.score.Evidence` entry with
the tool, the round, the label and the image's size (the frame its box is drawn in), clipped
to the image; a box that lies outside it is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping

from cigeval.score import Evidence
from cigeval.tools.base import ToolResult
from cigeval.tools.boxes import clip_box

#: Digits kept of each coordinate (a hundredth of a pixel).
_DIGITS = 2


def evidence_of(
    result: ToolResult, round_number: int, sizes: Mapping[str, tuple[int, int]]
) -> list[Evidence]:
    """The regions ``result`` found, as evidence of round ``round_number``.

    ``sizes`` gives each image role's ``(width, height)``; a role it does not name keeps its
    boxes unclipped and without a size (a tool's own role, not an image of the sample).
    """
    entries: list[Evidence] = []
    for role, boxes in result.boxes.items():
        size = sizes.get(role)
        for found in boxes:
            box = clip_box(found, *size) if size is not None else found
            if box is None:
                continue
            entries.append(
                Evidence(
                    box=(
                        round(box.x0, _DIGITS),
                        round(box.y0, _DIGITS),
                        round(box.x1, _DIGITS),
                        round(box.y1, _DIGITS),
                    ),
                    label=box.label or "region",
                    tool=box.found_by or result.tool,
                    role=role,
                    image_size=size,
                    round=round_number,
                    confidence=None if box.score is None else round(box.score, 4),
                )
            )
    return entries
