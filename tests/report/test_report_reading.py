"""What makes a report easy to read (issue 44): paths shown from the page, cards in the order
of the input, runs of one judge named by the setting that differs, no empty agreement table,
and the edit mask on mask-guided cards, marked as not shown to the judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cigeval.report import build_report, write_report
from cigeval.report.cards import NOT_SHOWN_NOTE
from tests.report.conftest import JudgedRun


def _record(sid: str, position: int | None = None, **config: object) -> dict:
    record: dict = {
        "id": sid,
        "task": "text_guided_ig",
        "status": "ok",
        "score": 0.5,
        "sub_scores": [],
        "model": "gen",
        "judge": "openai:judge",
        "config": {"rubric": "cigeval", "method": "paper", **config},
    }
    if position is not None:
        record["provenance"] = {
            "input_position": position,
            "samples_file": {"path": "/data/samples.jsonl"},
        }
    return record


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _cards(html: str) -> list[dict]:
    data = re.search(r'<script type="application/json" id="cg-data">(.*?)</script>', html, re.S)
    assert data is not None
    return json.loads(data.group(1))["samples"]


def test_paths_on_the_page_are_relative_to_the_page(tmp_path: Path) -> None:
    missing = tmp_path / "images" / "gone.png"
    results = _write(
        tmp_path / "runs" / "judge.jsonl",
        [
            {
                **_record("a"),
                "input_images": {"output": "ab" * 32},
                "image_files": {"ab" * 32: str(missing)},
            }
        ],
    )
    page = write_report([results], tmp_path / "pages" / "report.html", n_boot=10)
    html = (tmp_path / "pages" / "report.html").read_text()
    assert str(tmp_path) not in html  # no absolute path anywhere on the page
    assert "<td>../runs/judge.jsonl</td>" in html  # the run's results file, from the page
    assert "file not found: ../images/gone.png" in html
    assert page.shown_path(results) == "../runs/judge.jsonl"


def test_cards_follow_the_input_order_not_the_order_samples_finished(tmp_path: Path) -> None:
    finished = [_record("third", 3), _record("first", 1), _record("no-place"), _record("second", 2)]
    report = build_report([_write(tmp_path / "r.jsonl", finished)], n_boot=10)
    assert [card["id"] for card in _cards(report.to_html())] == [
        "first",
        "second",
        "third",
        "no-place",  # written before positions were recorded: after, in file order
    ]
    assert '<option value="order">input order</option>' in report.to_html()


def test_runs_of_one_judge_are_named_by_the_setting_that_differs(tmp_path: Path) -> None:
    paper = _write(tmp_path / "paper.jsonl", [_record("a"), _record("b")])
    extended = _write(
        tmp_path / "extended.jsonl",
        [_record("a", method="extended", tool_text="detailed"), _record("b", method="extended")],
    )
    again = _write(tmp_path / "again.jsonl", [_record("a"), _record("b")])
    report = build_report([paper, extended, again], n_boot=10)
    labels = [run.label for run in report.runs]
    # the second file's records of two settings are two runs; each run is named by the
    # settings that differ, and runs of the same settings by their files
    assert labels == [
        "openai:judge (method=paper, tool_text=null) (paper.jsonl)",
        "openai:judge (method=extended, tool_text=detailed)",
        "openai:judge (method=extended, tool_text=null)",
        "openai:judge (method=paper, tool_text=null) (again.jsonl)",
    ]
    assert len(set(labels)) == len(labels)


def test_the_same_settings_in_two_files_are_named_by_their_files(tmp_path: Path) -> None:
    first = _write(tmp_path / "monday.jsonl", [_record("a")])
    second = _write(tmp_path / "tuesday.jsonl", [_record("a")])
    labels = [run.label for run in build_report([first, second], n_boot=10).runs]
    assert labels == ["openai:judge (monday.jsonl)", "openai:judge (tuesday.jsonl)"]


def test_runs_without_a_sample_in_common_have_no_agreement_table(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.jsonl", [_record("a"), _record("b")])
    second = _write(tmp_path / "b.jsonl", [_record("c", method="extended")])
    html = build_report([first, second], n_boot=10).to_html()
    assert "Agreement between judges" not in html
    shared = _write(tmp_path / "c.jsonl", [_record("a", method="extended")])
    assert "Agreement between judges" in build_report([first, shared], n_boot=10).to_html()


def test_mask_guided_cards_show_the_mask_as_not_shown_to_the_judge(
    judged_run: JudgedRun, tmp_path: Path
) -> None:
    records = [json.loads(line) for line in judged_run.first.read_text().splitlines()[:-1]]
    (masked,) = [r for r in records if r["id"] == "GenA-mie"]
    mask_sha = masked["images_not_shown"]["mask"]
    assert mask_sha not in masked["input_images"].values()  # never sent to the judge
    assert Path(masked["image_files"][mask_sha]).is_file()
    report = build_report([judged_run.first], n_boot=10)
    assert mask_sha in report.catalog.thumbnails
    (card,) = [c for c in _cards(report.to_html()) if c["id"] == "GenA-mie"]
    figures = re.findall(r"<figure class=\"cg-fig\">(.*?)</figure>", card["html"], re.S)
    (mask,) = [f for f in figures if f'data-img="{mask_sha}"' in f]
    assert f"mask<br><i>{NOT_SHOWN_NOTE}</i>" in mask
    assert all(NOT_SHOWN_NOTE not in f for f in figures if f is not mask)
    # records keep where their sample stood in the samples file: line numbers
    positions = {r["id"]: r["provenance"]["input_position"] for r in records}
    assert sorted(positions.values()) == list(range(1, len(judged_run.samples) + 1))
    assert positions == {s["id"]: n for n, s in enumerate(judged_run.samples, start=1)}
