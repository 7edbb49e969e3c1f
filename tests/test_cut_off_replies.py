"""An unfinished reply is never a score (issue 23), end to end through an HTTP server.

A reply cut at the token limit (``finish_reason: "length"``, content ``{"score": "1``) used to
be read as the score 1. Here a local OpenAI-compatible server cuts 25% or 50% of its replies
short, at random and often just inside the score (a "10" becoming ``"1``); every record that
comes out ``ok`` must equal the fault-free run's record, score for score, and every cut reply
must be counted and none used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from cigeval.results.jsonl import read_records
from cigeval.testing import request_text, rule_judge
from tests.cli_support import evaluate_cli
from tests.openai_server import FakeOpenAIServer
from tests.samples_factory import seven_task_samples, write_jsonl

#: Scores the judge gives; "10" is there so that a cut "1" would be a wrong number.
SCORES = ("10", "3", "10", "7", "1", "10", "5", "0")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def scoring_judge(body: dict[str, Any]) -> str:
    """cigeval's rule judge, with a score (as a quoted string) that depends on the question:
    the same question always gets the same score, whatever the token budget."""
    reply = rule_judge()(body)
    if not reply.startswith('{"score"'):
        return reply  # a plan
    question = request_text({"messages": body["messages"][:2]})
    digest = hashlib.sha256(question.encode()).digest()[0]
    return json.dumps({"score": SCORES[digest % len(SCORES)], "reasoning": "judged"})


def study(folder: Path, count: int) -> Path:
    """``count`` samples over the seven tasks, each worded differently."""
    base = seven_task_samples(folder)
    samples = []
    for n in range(count):
        sample = dict(base[n % len(base)])
        sample["id"] = f"{sample['id']}-{n}"
        for field in ("prompt", "instruction"):
            if field in sample:
                sample[field] = f"{sample[field]} (variant {n})"
        samples.append(sample)
    return write_jsonl(folder / "samples.jsonl", samples)


def by_id(out: Path) -> dict[str, dict[str, Any]]:
    return {record["id"]: record for record in read_records(out)}


def scores(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["score"], *(s["score"] for s in record["sub_scores"]))


@pytest.mark.parametrize(("rate", "least_ok"), [(0.25, 0.8), (0.5, 0.4)])
def test_cut_off_replies_never_become_scores(env: Path, rate: float, least_ok: float) -> None:
    samples = study(env, 28)
    flags = ("--no-cache", "--concurrency", "8")
    with FakeOpenAIServer(scoring_judge) as server:
        assert evaluate_cli(server, samples, env / "clean.jsonl", *flags) == 0
    with FakeOpenAIServer(scoring_judge) as server:
        server.cut_off(rate, seed=23)
        status = evaluate_cli(server, samples, env / "cut.jsonl", *flags)
        requests = list(server.requests)
    clean, faulty = by_id(env / "clean.jsonl"), by_id(env / "cut.jsonl")
    assert clean.keys() == faulty.keys() and len(clean) == 28
    assert len({scores(r) for r in clean.values()}) > 5  # the scores really vary

    cut = [r for r in requests if r.fault == "cut"]
    assert 0.6 * rate < len(cut) / len(requests) < 1.4 * rate
    # The issue's case happened: a "10" cut to '{"score": "1'.
    assert any((r.reply or "").endswith('{"score": "1') for r in cut)

    ok = [i for i, r in faulty.items() if r["status"] == "ok"]
    assert len(ok) >= least_ok * len(faulty)
    for sample_id in ok:
        assert scores(faulty[sample_id]) == scores(clean[sample_id]), sample_id
    for record in faulty.values():
        if record["status"] == "error":
            assert "cut off at 4096 tokens (finish_reason=length)" in record["error"]
    assert status == (0 if len(ok) == len(faulty) else 1)

    # Honest counts: every cut reply counted, every HTTP request counted, none lost.
    usage = [r["usage"] for r in faulty.values()]
    assert sum(u["cut_off_replies"] for u in usage) == len(cut)
    assert sum(u["http_attempts"] for u in usage) == len(requests)
    assert sum(u["calls"] for u in usage) == len(requests)
