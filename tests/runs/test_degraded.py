"""Degradation is visible: a judge whose plans never parse has every sub-question judged
without the tool the plan chose; the summary, the report, ``to_frame`` and (under
``--on-degraded error``) the exit status say so."""

from __future__ import annotations

from pathlib import Path

import pytest

import cigeval
from cigeval.report import build_report
from cigeval.results import read_records
from cigeval.tasks import get_task
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

#: The strict reading judges a sub-question without a tool after unusable plans; the
#: official one (the paper method's default) drops such a sample, as the official code does.
TOOLS = ("--tools", "Difference", "--reply-parsing", "strict")


def _plans_never_parse(body: dict) -> str:
    if "### Task" in request_text(body):
        return "I would rather not plan anything today."
    return rule_judge(default_score=6)(body)


@pytest.fixture
def samples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:3])


def _questions(samples: Path) -> int:
    rows = [r for r in read_records(samples)]
    return sum(len(get_task(r["task"]).sub_questions) for r in rows)


def test_unusable_plans_show_in_the_summary_the_report_and_the_frame(
    samples: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "warn.jsonl"
    with FakeOpenAIServer(_plans_never_parse) as server:
        status = evaluate_cli(server, samples, out, *TOOLS)
    err = capsys.readouterr().err
    assert status == 0  # warn (the default): kept as ok, but counted and shown
    questions = _questions(samples)
    assert f"degraded: 3 sample(s), {questions} sub-question(s) judged without the tool" in err
    records = list(read_records(out))
    assert all(r["status"] == "ok" for r in records)
    assert all(s["degraded"] for r in records for s in r["sub_scores"])
    frame = cigeval.to_frame(records)
    assert frame["degraded"].sum() == questions and (frame["degraded"] > 0).all()
    page = build_report([out], n_boot=20)
    cards = page._cards(inline=True)
    assert [c["degraded"] for c in cards] == [len(get_task(c["task"]).sub_questions) for c in cards]
    assert all("cg-badge cg-deg" in c["html"] for c in cards)
    html = page.to_html()
    assert '<option value="degraded">degraded</option>' in html
    assert 'status === "degraded"' in html  # the filter the option drives


def test_on_degraded_error_makes_them_error_records_saying_why(
    samples: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "error.jsonl"
    with FakeOpenAIServer(_plans_never_parse) as server:
        status = evaluate_cli(server, samples, out, *TOOLS, "--on-degraded", "error")
    err = capsys.readouterr().err
    assert status == 1
    assert "made errors by --on-degraded error" in err and "3 error" in err
    for record in read_records(out):
        assert record["status"] == "error" and record["score"] is None
        assert record["error"].startswith("refused by --on-degraded error:")
        assert "judged without the tool the plan chose" in record["error"]
        assert all(s["degraded"] for s in record["sub_scores"])


def test_a_good_plan_is_not_degraded(samples: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "fine.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, "--on-degraded", "error") == 0
    assert "degraded:" not in capsys.readouterr().err
    assert cigeval.to_frame(list(read_records(out)))["degraded"].sum() == 0
