"""The report's Compare section: paired differences, win rates and the forest plot of a scored
run, the accuracy table and inconsistent pairs of a pairwise run; in Python and in headless
Chromium (the browser half is skipped, saying so, when /usr/bin/chromium is absent)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageStat

from cigeval.cli import main
from cigeval.report import build_report, write_report
from cigeval.testing.browser import CHROMIUM, CHROMIUM_ARGS

HOSTILE = "<img src=x onerror=window.__pwned=3>"
GENERATORS = ("GenA", "GenB", HOSTILE)


def scored_records(conditions: int = 40) -> list[dict]:
    """Three generators on the same prompts: GenB 0.1 better than GenA, the third equal."""
    rng = np.random.default_rng(0)
    records = []
    for i in range(conditions):
        task = "text_guided_ig" if i % 2 else "control_guided_ig"
        base = float(rng.uniform(0.2, 0.7))
        offsets = {"GenA": 0.0, "GenB": 0.1, HOSTILE: 0.0}
        for generator in GENERATORS:
            noise = 0.0 if generator == "GenA" else float(rng.choice([-0.1, 0.0, 0.1]))
            records.append({
                "id": f"{generator[:4]}-{i}", "task": task, "model": generator, "status": "ok",
                "score": round(min(1.0, base + offsets[generator] + noise), 1),
                "sub_scores": [], "conditions": {"prompt": f"prompt {i}"}, "judge": "scripted:j",
            })  # fmt: skip
    return records


def preference_records() -> list[dict]:
    """A pairwise run: two right, one wrong, one inconsistent (its orders disagreed)."""

    def record(sid, human, ranking, consistent, orders):
        return {
            "id": sid, "task": "text_guided_ie", "rubric": "pairwise", "status": "ok",
            "score": 1.0 if consistent else 0.5, "sub_scores": [], "human": human,
            "conditions": {"instruction": "make it red"}, "judge": "scripted:p",
            "details": {"candidates": ["A", "B"], "ranking": ranking, "consistent": consistent,
                        "preference": ranking[0][0] if len(ranking[0]) == 1 else "tie",
                        "orders": [{"order": o, "ranking": r} for o, r in orders]},
        }  # fmt: skip

    ab, ba = ["A", "B"], ["B", "A"]
    return [
        record("p1", "A", [["A"], ["B"]], True, [(ab, [["A"], ["B"]]), (ba, [["A"], ["B"]])]),
        record("p2", "B", [["B"], ["A"]], True, [(ab, [["B"], ["A"]]), (ba, [["B"], ["A"]])]),
        record("p3", "B", [["A"], ["B"]], True, [(ab, [["A"], ["B"]]), (ba, [["A"], ["B"]])]),
        record("p4-flip", "A", [["A", "B"]], False, [(ab, [["A"], ["B"]]), (ba, [["B"], ["A"]])]),
    ]


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_compare_section_pairs_generators_and_scores_preferences(tmp_path):
    scored = write(tmp_path / "scored.jsonl", scored_records())
    pairwise = write(tmp_path / "pairwise.jsonl", preference_records())
    report = build_report([scored, pairwise], n_boot=200)
    html = report.compare_html
    assert 'id="cg-compare"' in html and "baseline <b>GenA</b>" in html
    assert html.count("<circle") == 6  # GenB and the third, overall and on each of two tasks
    assert "Bradley–Terry ranking" in html
    assert "Never paired" not in html  # the pairwise records are scored in their own part
    assert HOSTILE not in html and "&lt;img src=x onerror=window.__pwned=3&gt;" in html
    # the preference run: 2 of 4 right with ties (p1, p2), p4-flip listed as inconsistent
    assert "0.500" in html and "p4-flip" in html and "A B → A &gt; B; B A → B &gt; A" in html
    chosen = build_report([scored], n_boot=50, baseline="GenB").compare_html
    assert "baseline <b>GenB</b>" in chosen
    unknown = build_report([scored], n_boot=50, baseline="nobody").compare_html
    assert "no comparison" in unknown and "baseline &#39;nobody&#39;" in unknown
    assert build_report(scored_records()[:1], n_boot=10).compare_html == ""  # one generator
    assert 'id="cg-compare"' in report.fragment(max_cards=1)


def test_the_report_command_takes_a_baseline(tmp_path, capsys):
    scored = write(tmp_path / "scored.jsonl", scored_records(10))
    out = tmp_path / "page.html"
    assert main(["report", str(scored), "-o", str(out), "--bootstrap", "50",
                 "--baseline", "GenB"]) == 0  # fmt: skip
    assert "baseline <b>GenB</b>" in out.read_text(encoding="utf-8")


browser_only = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CIGEVAL_REQUIRE_BROWSER"),
    reason="/usr/bin/chromium is absent (bash scripts/setup_test.sh installs Debian's chromium "
    "when run as root)",
)


@browser_only
def test_the_compare_section_renders_in_chromium(tmp_path):
    scored = write(tmp_path / "scored.jsonl", scored_records())
    pairwise = write(tmp_path / "pairwise.jsonl", preference_records())
    page_file = tmp_path / "report.html"
    write_report([scored, pairwise], page_file, n_boot=200)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (dev extra)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning")
                else None)  # fmt: skip
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(page_file.as_uri())
        page.wait_for_selector("#cg-cards .cg-card")
        section = page.locator("#cg-compare-body")
        section.scroll_into_view_if_needed()
        assert page.locator("#cg-compare").is_visible()
        forest = page.locator("svg.cg-forest").first
        box = forest.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100
        assert forest.locator("circle").count() == 6
        table = page.locator(".cg-compare-table").first.inner_text()
        assert "GenB" in table and HOSTILE in table  # the hostile name shown as text
        assert page.evaluate("window.__pwned") is None
        assert "p4-flip" in page.locator(".cg-inconsistent").inner_text()
        assert "accuracy with ties" in page.locator(".cg-accuracy").inner_text()
        shot = Image.open(io.BytesIO(forest.screenshot())).convert("L")
        assert max(ImageStat.Stat(shot).var) > 100, "the forest plot is blank"
        assert problems == []
        browser.close()


def test_preference_records_stay_out_of_the_leaderboard() -> None:
    """A pairwise record's score is the share of presentation orders that agree, not a
    quality score: it belongs to the Compare section, never to a generator's mean."""
    from cigeval.report.stats import leaderboard
    from cigeval.results.run import Run

    common = {"task": "text_guided_ig", "status": "ok"}
    scored = {**common, "id": "s1", "rubric": "cigeval", "score": 0.8, "model": "GenA"}
    details = {"candidates": ["A", "B"], "preference": "tie"}
    preference = {**common, "id": "p1", "rubric": "pairwise", "score": 0.5, "details": details}
    board = leaderboard(Run("judge", "mem", [scored, preference]), n_boot=10)
    assert list(board.overall) == ["GenA"] and board.overall["GenA"].n == 1
