"""The report draws each sub-question's evidence boxes on the images they belong to, in a real
browser (Debian's Chromium): a judged edit of a large, wide image whose thumbnail is shown
much smaller, the boxes landing on the planted change at the thumbnail's scale."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.report import write_report
from cigeval.report.cards import TOOL_COLOURS
from cigeval.sample import sample_from_dict
from cigeval.testing import rule_judge
from cigeval.testing.browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CIGEVAL_REQUIRE_BROWSER"),
    reason="/usr/bin/chromium is absent (scripts/setup_test.sh installs Debian's chromium)",
)

#: The source's size and the output's (a different size: each image's boxes are its own).
SOURCE, OUTPUT = (900, 500), (720, 400)
#: The planted change, in the source's pixels.
PLANTED = (600, 100, 750, 300)


def _pair(folder: Path) -> dict[str, str]:
    source = Image.new("RGB", SOURCE, (128, 128, 128))
    output = source.copy()
    ImageDraw.Draw(output).rectangle((PLANTED[0], PLANTED[1], PLANTED[2] - 1, PLANTED[3] - 1),
                                     fill=(40, 60, 230))  # fmt: skip
    source.save(folder / "source.png")
    output.resize(OUTPUT, Image.Resampling.NEAREST).save(folder / "output.png")
    return {"source": "source.png", "output": "output.png"}


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("evidence-page")
    sample = sample_from_dict(
        {"id": "wide", "task": "text_guided_ie", "instruction": "add a blue box",
         "images": _pair(folder)},
        base_dir=folder,
    )  # fmt: skip
    evaluator = Evaluator(
        ScriptedBackend(rule_judge(tools={"over_editing": "Difference"})),
        run_config=RunConfig(use_cache=False, preflight=False),
        tools=("Difference",),
        method="extended",
    )
    score = evaluator.evaluate(sample)
    assert score.status == "ok", score.error
    out = folder / "report.html"
    write_report([score], out, n_boot=20)
    return out


@pytest.fixture(scope="module")
def page(page_file):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (dev extra)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        opened = browser.new_page(viewport={"width": 1280, "height": 900})
        problems: list[str] = []
        opened.on("pageerror", lambda error: problems.append(str(error)))
        opened.goto(page_file.as_uri())
        opened.wait_for_selector("#cg-cards .cg-evfig img")
        opened.wait_for_function(
            "[...document.querySelectorAll('.cg-evfig img')].every(i => i.naturalWidth > 0)"
        )
        yield opened
        assert problems == []
        browser.close()


def _figure(page, role: str):
    figures = page.locator(".cg-evfig", has_text=f"{role} · evidence")
    assert figures.count() == 1
    return figures.first


@pytest.mark.parametrize(("role", "size"), [("source", SOURCE), ("output", OUTPUT)])
def test_the_boxes_land_on_the_change_at_the_thumbnails_scale(page, role: str, size):
    figure = _figure(page, role)
    image = figure.locator("img").bounding_box()
    rect = figure.locator("rect").first.bounding_box()
    assert image is not None and rect is not None
    assert image["width"] < size[0] / 4  # shown far smaller than the image
    sx, sy = image["width"] / size[0], image["height"] / size[1]
    scale = (size[0] / SOURCE[0], size[1] / SOURCE[1])
    x0, y0, x1, y1 = (PLANTED[0] * scale[0], PLANTED[1] * scale[1],
                      PLANTED[2] * scale[0], PLANTED[3] * scale[1])  # fmt: skip
    # the stroke (2 px, not scaled) straddles the box's outline
    assert rect["x"] - image["x"] == pytest.approx(x0 * sx, abs=2.5)
    assert rect["y"] - image["y"] == pytest.approx(y0 * sy, abs=2.5)
    assert rect["width"] == pytest.approx((x1 - x0) * sx, abs=3)
    assert rect["height"] == pytest.approx((y1 - y0) * sy, abs=3)
    # and it is drawn: the tool's colour on screen along the box's left edge, not beside it
    shot = Image.open(io.BytesIO(figure.locator(".cg-ev").screenshot())).convert("RGB")
    scale_px = shot.width / image["width"]  # device pixels per CSS pixel
    red = tuple(int(TOOL_COLOURS["Difference"][i : i + 2], 16) for i in (1, 3, 5))
    column = round(x0 * sx * scale_px)
    middle = round((y0 + y1) / 2 * sy * scale_px)

    def near(pixel) -> bool:
        return sum(abs(a - b) for a, b in zip(pixel, red, strict=True)) < 60

    assert near(shot.getpixel((column, middle)))
    assert not near(shot.getpixel((column // 2, middle)))


def test_the_card_lists_the_regions_in_words(page):
    text = page.locator(".cg-evlist").first.text_content() or ""
    listed = re.findall(r"(\w+): changed \[(\d+), (\d+), (\d+), (\d+)\] \(Difference\)", text)
    assert [role for role, *_ in listed] == ["source", "output"]
    for (role, *box), size in zip(listed, (SOURCE, OUTPUT), strict=True):
        sx, sy = size[0] / SOURCE[0], size[1] / SOURCE[1]
        planted = (PLANTED[0] * sx, PLANTED[1] * sy, PLANTED[2] * sx, PLANTED[3] * sy)
        assert [int(v) for v in box] == pytest.approx(planted, abs=2), role  # the blur's pixel
