"""Small text helpers shared by the tools' observations."""

from __future__ import annotations

from collections.abc import Iterable

from cigeval.tools.base import Box
from cigeval.tools.highlight import DIM_FACTOR

#: What the judge is told of a Grounding or Difference result under ``tool_text="focus"``
#: (the paper method): the official code's meaning, whatever was found, and nothing more.
FOCUS_TEXT = "Look closely at the highlighted parts of the image(s)."


def fmt_box(box: Box) -> str:
    """``[x0, y0, x1, y1]`` rounded to whole pixels."""
    return "[" + ", ".join(str(round(v)) for v in box.as_list()) + "]"


def fmt_boxes(boxes: Iterable[Box]) -> str:
    """Boxes as a comma-separated list of :func:`fmt_box`."""
    return ", ".join(fmt_box(b) for b in boxes)


def box_record(box: Box) -> dict[str, object]:
    """A JSON-serialisable dict of a box (for ``ToolResult.data`` and caches)."""
    record: dict[str, object] = {"box": [round(v, 2) for v in box.as_list()]}
    if box.label is not None:
        record["label"] = box.label
    if box.score is not None:
        record["score"] = round(box.score, 4)
    return record


def box_from_record(record: dict[str, object]) -> Box:
    """The inverse of :func:`box_record`."""
    coords = record.get("box")
    if not isinstance(coords, list) or len(coords) != 4:
        raise ValueError(f"malformed box record: {record!r}")
    x0, y0, x1, y1 = (float(v) for v in coords)
    label = record.get("label")
    score = record.get("score")
    return Box(
        x0,
        y0,
        x1,
        y1,
        label=str(label) if label is not None else None,
        score=float(score) if isinstance(score, (int, float)) else None,
    )


def percent(fraction: float) -> str:
    """A fraction as a short percentage, never rounding a real change down to 0%."""
    value = fraction * 100
    if 0 < value < 0.1:
        return "<0.1%"
    return f"{value:.1f}%"


def highlight_note(highlighted: bool, what: str) -> str:
    """The closing line of an observation: what is highlighted, or that nothing is."""
    if not highlighted:
        return "Nothing is highlighted."
    return f"The {what} are highlighted; everything else is dimmed to 1/{DIM_FACTOR}."
