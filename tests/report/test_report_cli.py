"""``cigeval report`` on a run of every task with two generators and two judges."""

from __future__ import annotations

import html
import json
import re

from cigeval.cli import main
from cigeval.report.page import json_for_script
from cigeval.tasks import get_task
from tests.report.conftest import GENERATORS, HOSTILE_PROMPT, HOSTILE_REASONING, JudgedRun


def _page_data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="cg-data">(.*?)</script>', page, re.S)
    assert found, "the page has no data block"
    return json.loads(found.group(1))


def test_report_shows_every_sample_with_conditions_images_and_both_generators(
    judged_run: JudgedRun, tmp_path, capsys
):
    out = tmp_path / "report.html"
    argv = ["report", str(judged_run.first), str(judged_run.second), "-o", str(out)]
    assert main([*argv, "--bootstrap", "200", "--seed", "3"]) == 0
    assert "1 unreadable line(s)" in capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    data = _page_data(page)
    cards = {card["id"]: card for card in data["samples"]}
    assert set(cards) == {s["id"] for s in judged_run.samples}
    assert data["judges"] == ["openai:judge-model", "openai:second-judge"]
    assert data["generators"] == list(GENERATORS)
    records = {json.loads(line)["id"]: json.loads(line) for line in
               judged_run.second.read_text().splitlines()}  # fmt: skip
    for sample in judged_run.samples:
        card = cards[sample["id"]]
        assert card["task"] == sample["task"] and card["generator"] == sample["model"]
        for field in ("prompt", "instruction", "subject"):
            if sample.get(field):
                assert html.escape(sample[field]) in card["html"], (sample["id"], field)
        # every input image is embedded once, and shown in the task's order, output last
        shown = re.findall(r'data-img="([0-9a-f]{64})" alt="([^"]+)"', card["html"])
        inputs = records[sample["id"]]["input_images"]
        roles = [role for _, role in shown if role in inputs]
        spec = get_task(sample["task"])
        assert roles[-1] == "output" and set(roles) == set(inputs)
        if "source" in inputs:
            assert roles.index("source") < roles.index("output")
        if spec.id == "multi_concept_ic":
            assert roles == ["subject_1", "subject_2", "output"]
        for sha, _ in shown:
            assert data["images"][sha].startswith("data:image/")
    # the tool's highlighted images of the Difference tool are on the mask-guided editing card
    # (the paper method runs Difference only there)
    assert 'class="cg-imgs cg-tool-imgs"' in cards["GenA-mie"]["html"]
    # both generators ranked with an interval, per judge, and the judges' agreement
    for generator in GENERATORS:
        assert re.search(
            rf"<td>\d</td><td>{generator}</td><td class=\"num\"><b>0\.\d{{3}}</b>"
            r'<span class="cg-ci"> \[0\.\d{3}, 0\.\d{3}\]</span>',
            page,
        ), generator
    assert "Agreement between judges" in page and "Agreement with the human ratings" in page
    # provenance in the header; the unreadable line listed
    assert "cigeval version" in page and "openai:second-judge" in page
    assert "line 15: not JSON" in page
    # hostile text only ever as text
    assert HOSTILE_PROMPT not in page and HOSTILE_REASONING not in page
    assert html.escape(HOSTILE_PROMPT) in cards["GenA-t2i"]["html"]
    assert "<script>window" not in page and "<img src=x" not in page
    assert page.count("</script>") == 2  # the data block and the page's script, nothing else
    # nothing refers to the network
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "default-src 'none'" in page


def test_report_refuses_missing_files_and_bad_levels(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "nope.jsonl"), "-o", str(out)]) == 2
    assert "results file(s) not found" in capsys.readouterr().err
    results = tmp_path / "r.jsonl"
    results.write_text("")
    assert main(["report", str(results), "-o", str(out), "--confidence", "95"]) == 2
    assert "--confidence" in capsys.readouterr().err
    assert not out.exists()


def test_json_for_script_cannot_close_the_block():
    text = json_for_script({"a": "</script><!-- <script> & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- <script> & \u2028"}
    hostile = {
        "</script>": ["<b>", {"&": "\u2029"}],
        "images": {"f" * 64: "data:image/png;base64,iVBORw0KGgo="},
        "lone": "\udc80",  # orjson refuses it: the standard module writes it as an escape
    }
    for value in (hostile, [hostile, 1.5, None]):
        text = json_for_script(value)
        assert not set("<>&\u2028\u2029") & set(text)
        assert json.loads(text) == value
