"""The report in a real browser: headless Chromium from Debian (scripts/setup_test.sh installs it)
loads the page from file://, shows it, filters, sorts and pages, and never runs model text."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from cigeval.report import write_report
from cigeval.testing.browser import CHROMIUM, CHROMIUM_ARGS
from tests.report.conftest import JudgedRun

# CI sets CIGEVAL_REQUIRE_BROWSER=1 (.ci/run): there a missing browser fails instead of skipping.
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CIGEVAL_REQUIRE_BROWSER"),
    reason="/usr/bin/chromium is absent (bash scripts/setup_test.sh installs Debian's chromium "
    "when run as root)",
)


@pytest.fixture(scope="module")
def page_file(judged_run: JudgedRun, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("page") / "report.html"
    write_report([judged_run.first, judged_run.second], out, n_boot=100)
    return out


@pytest.fixture(scope="module")
def browser(page_file):
    # page_file first: the judged run uses asyncio.run, which cannot start inside the event
    # loop that playwright's sync API keeps running
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (dev extra)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def _open(browser, page_file: Path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in (
        "error", "warning") else None)  # fmt: skip
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(page_file.as_uri())
    page.wait_for_selector("#cg-cards .cg-card")
    return page, problems, requests


def _count(page) -> int:
    return page.locator("#cg-cards .cg-card").count()


def test_page_renders_offline_without_errors_or_script_injection(browser, page_file, tmp_path):
    page, problems, requests = _open(browser, page_file)
    assert problems == []
    assert requests and all(u.startswith(("file:", "data:")) for u in requests), requests
    assert page.evaluate("window.__pwned") is None
    assert _count(page) == 14
    # hostile text is on screen as text
    body = page.inner_text("#cg-cards")
    assert "<script>window.__pwned=1</script> a red square" in body
    assert "</script><img src=x onerror=window.__pwned=2> looks fine" in body
    # thumbnails decoded (data URIs), none broken
    broken = page.evaluate(
        "[...document.querySelectorAll('#cg-cards img')]"
        ".filter(i => !i.complete || i.naturalWidth === 0).length"
    )
    assert broken == 0 and page.locator("#cg-cards img").count() > 14
    shot = page.screenshot(full_page=False)
    (tmp_path / "report.png").write_bytes(shot)
    image = Image.open(io.BytesIO(shot)).convert("L")
    assert max(ImageStat.Stat(image).var) > 100, "the screenshot is blank"
    artifacts = Path.cwd() / "test-artifacts"
    if artifacts.is_dir():  # keep the picture where CI collects artifacts
        shutil.copy(tmp_path / "report.png", artifacts / "report.png")
    page.close()


def test_filter_sort_and_page(browser, page_file):
    page, problems, _ = _open(browser, page_file)
    page.select_option("#cg-gen", "GenB")
    assert _count(page) == 7
    assert all(t.startswith("GenB-") for t in page.locator("#cg-cards .cg-id").all_inner_texts())
    page.select_option("#cg-task", "text_guided_ie")
    assert _count(page) == 1
    page.select_option("#cg-gen", "")
    page.select_option("#cg-task", "")
    page.fill("#cg-max", "0.4")  # judge 1 scored the two editing tasks 0.3
    ids = page.locator("#cg-cards .cg-id").all_inner_texts()
    assert sorted(ids) == ["GenA-mie", "GenA-tie", "GenB-mie", "GenB-tie"]
    page.select_option("#cg-judge", "1")  # the second judge gave 0.5 everywhere
    assert _count(page) == 0
    page.fill("#cg-max", "")
    page.select_option("#cg-sort", "spread")
    first = page.locator("#cg-cards .cg-id").first.inner_text()
    assert first.endswith(("-mie", "-tie"))  # |0.3 - 0.5| is the largest disagreement
    page.select_option("#cg-status", "error")
    assert _count(page) == 0 and "0 of 14" in page.inner_text("#cg-count")
    page.select_option("#cg-status", "")
    page.fill("#cg-text", "red square")
    assert _count(page) == 2
    page.fill("#cg-text", "")
    assert _count(page) == 14 and page.is_disabled("#cg-next")  # one page of 200 holds all
    assert problems == []
    page.close()


def test_paging_through_many_samples(browser, tmp_path):
    records = [
        {"id": f"s{i:03d}", "task": "text_guided_ig", "status": "ok", "score": i / 450,
         "sub_scores": [], "model": f"g{i % 3}", "conditions": {"prompt": f"prompt {i}"}}
        for i in range(450)
    ]  # fmt: skip
    out = write_report(records, tmp_path / "many.html", n_boot=20)
    assert out.runs[0].records[0]["id"] == "s000"
    page, problems, _ = _open(browser, tmp_path / "many.html")
    assert _count(page) == 200 and "page 1 of 3" in page.inner_text("#cg-page")
    page.click("#cg-next")
    page.click("#cg-next")
    assert _count(page) == 50 and page.is_disabled("#cg-next")
    assert page.locator("#cg-cards .cg-id").first.inner_text() == "s400"
    page.select_option("#cg-sort", "score-desc")
    assert "page 1 of 3" in page.inner_text("#cg-page")
    assert page.locator("#cg-cards .cg-id").first.inner_text() == "s449"
    assert page.is_disabled("#cg-prev")
    assert problems == []
    page.close()


def test_records_without_a_model_draw_distributions(browser, tmp_path):
    # issue 32: a report of records naming no generator drew an empty axis and no bars
    records = [
        {"id": f"u{i}", "task": ("text_guided_ig", "text_guided_ie")[i % 2], "status": "ok",
         "score": (i % 10) / 10, "sub_scores": [], "conditions": {"prompt": f"prompt {i}"}}
        for i in range(30)
    ]  # fmt: skip
    write_report(records, tmp_path / "unranked.html", n_boot=20)
    page, problems, _ = _open(browser, tmp_path / "unranked.html")
    bars = page.locator("svg rect.cg-bar")
    assert bars.count() == 10  # five distinct scores on each of the two tasks, a bar each
    box = bars.first.bounding_box()
    assert box is not None and box["width"] > 1 and box["height"] > 1
    board = page.locator("svg", has_text="mean score per generator")
    assert board.locator("circle").count() == 1 and "(no model)" in (board.text_content() or "")
    assert page.locator("#cg-compare").count() == 0
    assert problems == []
    page.close()
