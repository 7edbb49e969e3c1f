"""OCR: real rapidocr on text rendered with a TrueType font; not registered by default."""

from __future__ import annotations

import glob
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from cigeval.errors import MissingDependency
from cigeval.tools import OCRTool, read_text, registered_tools
from cigeval.tools import ocr as ocr_module

from .conftest import MakeCtx

FONT_PATTERNS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/**/DejaVuSans*.ttf",
    "/usr/share/fonts/**/*.ttf",
    "/Library/Fonts/*.ttf",
    "C:/Windows/Fonts/arial.ttf",
)


def _font_path() -> str | None:
    for pattern in FONT_PATTERNS:
        for path in sorted(glob.glob(pattern, recursive=True)):
            if Path(path).is_file():
                return path
    return None


def _render(text: str, size: tuple[int, int] = (320, 120), at: tuple[int, int] = (20, 35)):
    font_path = _font_path()
    if font_path is None:
        pytest.skip("no TrueType font on this machine to render test text (install fonts-dejavu)")
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text(at, text, fill="black", font=ImageFont.truetype(font_path, 36))
    return image


def test_ocr_is_not_registered_by_default() -> None:
    assert "OCR" not in {tool.name for tool in registered_tools()}


def test_missing_rapidocr_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr_module, "_ENGINE", None)
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    with pytest.raises(MissingDependency, match=r"cigeval\[ocr\]"):
        read_text(Image.new("RGB", (8, 8)))


@pytest.mark.slow
async def test_ocr_tool_reads_rendered_text(make_ctx: MakeCtx) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    image = _render("HELLO 2024")
    ctx = make_ctx(
        "text_guided_ig", "prompt_following", {"output": image}, prompt="a sign saying HELLO 2024"
    )
    result = await OCRTool().run(ctx)
    assert result.tool == "OCR" and result.highlighted
    assert "'HELLO 2024'" in result.text
    assert set(result.images) == {"output"}
    (box,) = result.boxes["output"]
    assert box.label == "HELLO 2024" and box.score is not None and box.score > 0.8
    # The text was drawn from x=20, y=35 to about x=240, y=70.
    assert 10 <= box.x0 <= 25 and 25 <= box.y0 <= 45
    assert 220 <= box.x1 <= 260 and 60 <= box.y1 <= 85
    shown, original = np.asarray(result.images["output"]), np.asarray(image)
    x, y = int(box.x0) + 2, int(box.y0) + 2
    assert np.array_equal(shown[y, x], original[y, x])
    assert np.array_equal(shown[5, 5], original[5, 5] // 4)
    assert result.data["text"]["output"][0]["text"] == "HELLO 2024"


async def test_ocr_tool_without_text_highlights_nothing(
    make_ctx: MakeCtx, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine's own behaviour on blank images is covered above; this checks the tool's text.
    monkeypatch.setattr(ocr_module, "read_text", lambda image, min_confidence: [])
    images = {"source": Image.new("RGB", (40, 40)), "output": Image.new("RGB", (40, 40))}
    ctx = make_ctx("text_guided_ie", "edit_success", images, instruction="add a sign")
    result = await OCRTool().run(ctx)
    assert not result.highlighted and result.images == {} and result.boxes == {}
    assert "source image: no text found" in result.text
    assert "output image: no text found" in result.text
    assert "Nothing is highlighted" in result.text
