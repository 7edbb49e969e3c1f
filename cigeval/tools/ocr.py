"""OCR: read the text in the images (the user-added tool of the paper's §4.6).

An example of a tool a user adds; it is not registered by default::

    from cigeval.tools import OCRTool, register_tool
    register_tool(OCRTool())

Built on ``rapidocr-onnxruntime``, whose wheel ships the PP-OCR ONNX models, so it runs
offline on a CPU. The engine is created on first use and shared by the process.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from cigeval._caller import in_callers_words
from cigeval.errors import MissingDependency, PreflightError, ToolError
from cigeval.images import to_rgb
from cigeval.tools._format import box_record, fmt_box, highlight_note
from cigeval.tools.base import Box, ToolContext, ToolResult
from cigeval.tools.boxes import clip_box
from cigeval.tools.highlight import highlight

_ENGINE: Any = None
_ENGINE_LOCK = threading.Lock()
# The engine keeps per-call state in its objects; one image at a time is also all a CPU
# gives anyway, so calls are serialised.
_RUN_LOCK = threading.Lock()


_ENGINE_ERROR: ToolError | None = None


def _engine() -> Any:
    """The shared engine; an engine that failed to start fails again at once (remembered)."""
    global _ENGINE, _ENGINE_ERROR
    with _ENGINE_LOCK:
        if _ENGINE is None:
            if _ENGINE_ERROR is not None:
                raise _ENGINE_ERROR.with_traceback(None)
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError:
                raise MissingDependency("rapidocr-onnxruntime", "ocr", "The OCR tool") from None
            try:
                _ENGINE = RapidOCR()
            except Exception as exc:
                _ENGINE_ERROR = ToolError(f"the OCR engine could not start: {exc}")
                raise _ENGINE_ERROR from exc
        return _ENGINE


@dataclass(frozen=True)
class TextLine:
    """One line of recognised text, its confidence (0-1) and its box in image pixels."""

    text: str
    confidence: float
    box: Box


def read_text(image: Image.Image, min_confidence: float = 0.5) -> list[TextLine]:
    """Every line of text in ``image`` with confidence at least ``min_confidence``.

    Lines come in the engine's reading order. Blocking.
    """
    engine = _engine()
    # RapidOCR follows OpenCV's channel order.
    bgr = np.ascontiguousarray(np.asarray(to_rgb(image))[:, :, ::-1])
    try:
        with _RUN_LOCK:
            result, _ = engine(bgr)
    except Exception as exc:
        raise ToolError(f"OCR failed: {exc}") from exc
    lines: list[TextLine] = []
    for corners, text, confidence in result or []:
        if float(confidence) < min_confidence or not str(text).strip():
            continue
        xs = [float(p[0]) for p in corners]
        ys = [float(p[1]) for p in corners]
        box = clip_box(
            Box(min(xs), min(ys), max(xs), max(ys), label=str(text), score=float(confidence)),
            image.width,
            image.height,
        )
        if box is not None:
            lines.append(TextLine(str(text), float(confidence), box))
    return lines


class OCRTool:
    """The OCR tool: the text written in each image of the sub-question, highlighted.

    ``min_confidence`` drops low-confidence readings, which are mostly texture read as text.
    """

    name = "OCR"
    description = (
        "Reads the text written in the images (signs, labels, captions) with its confidence "
        "and highlights where it is. Useful when the prompt or instruction asks for specific "
        "text in the image."
    )

    def __init__(self, min_confidence: float = 0.5) -> None:
        self.min_confidence = min_confidence

    def preflight(self, config: Any) -> None:
        """Create the OCR engine now (blocking); PreflightError when it is not installed."""
        try:
            _engine()
        except (MissingDependency, ToolError) as exc:
            raise PreflightError(
                f"{exc}; or offer the agent tools without OCR "
                f"({in_callers_words('--tools', 'tools=[...]')} without it)"
            ) from exc

    async def run(self, ctx: ToolContext) -> ToolResult:
        """Read the text in every image the sub-question shows."""
        shown = {role: img for role, img in ctx.question_images().items() if role != "mask"}
        found: dict[str, list[TextLine]] = {}
        for role, image in shown.items():
            found[role] = await asyncio.to_thread(read_text, image, self.min_confidence)
        boxes = {role: [line.box for line in lines] for role, lines in found.items() if lines}
        images = {role: highlight(shown[role], role_boxes) for role, role_boxes in boxes.items()}
        return ToolResult(
            tool=self.name,
            text=_describe(found),
            images=images,
            boxes=boxes,
            highlighted=bool(images),
            data={
                "text": {
                    role: [{**box_record(line.box), "text": line.text} for line in lines]
                    for role, lines in found.items()
                }
            },
        )


def _describe(found: dict[str, list[TextLine]]) -> str:
    if not found:
        return "This sub-question shows no image to read. Nothing is highlighted."
    lines = ["Text read by OCR (confidence 0-1, box as [x0, y0, x1, y1] pixels):"]
    for role, read in found.items():
        if not read:
            lines.append(f"- {role} image: no text found.")
            continue
        listed = "; ".join(f"{t.text!r} ({t.confidence:.2f}) at {fmt_box(t.box)}" for t in read)
        lines.append(f"- {role} image: {listed}.")
    lines.append(highlight_note(any(found.values()), "text regions"))
    return "\n".join(lines)
