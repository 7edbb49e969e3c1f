"""Issue 41, replayed: a judge server that echoes the API key inside a successful reply (and
as the model's name) gets it stored nowhere: not in the results, the cache, the image folder
or the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.redact import redact_credentials, redact_known, remember_secret
from cigeval.results import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

KEY = "sk-echoed-4f1c2b9a7d3e5f60"


def _echoing(request: dict[str, Any]) -> str:
    reply = rule_judge()(request)
    answer = json.loads(reply)
    if isinstance(answer, dict) and "reasoning" in answer:
        answer["reasoning"] = f"Authorization: Bearer {KEY} looks fine"
        return json.dumps(answer)
    return reply + f"\n(your key: {KEY})"


def test_a_key_the_judge_echoes_is_in_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cache = tmp_path / "cache"
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(cache))
    two = [s for s in seven_task_samples(tmp_path / "set") if s["id"] in ("t2i", "tie")]
    samples = write_jsonl(tmp_path / "set" / "samples.jsonl", two)
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(_echoing, model=KEY) as server:
        assert evaluate_cli(server, samples, out, "--tools", "") == 0
        assert evaluate_cli(server, samples, tmp_path / "again.jsonl", "--tools", "") == 0
        assert server.requests[0].header("Authorization") == f"Bearer {KEY}"
    report = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(report), "--bootstrap", "10"]) == 0
    records = list(read_records(out))
    assert records and all(r["status"] == "ok" for r in records)
    assert any("Bearer ***" in s["reasoning"] for r in records for s in r["sub_scores"])
    holding = [
        str(p) for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()
    ]
    assert holding == []


def test_known_secrets_are_redacted_wherever_they_appear() -> None:
    remember_secret("tok-0123456789-abcdef")
    remember_secret("short")  # too short to be a key: never replaced
    text = "a tok-0123456789-abcdef b, short, http://u:pw@h/?key=v"
    assert redact_known(text) == "a *** b, short, http://u:pw@h/?key=v"
    assert redact_credentials(text) == "a *** b, short, http://***@h/?key=***"


def test_a_key_echoed_in_json_escapes_is_in_no_file_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reply's JSON spells the key with \\u escapes (and \\/): the parser decoded it into
    the reasoning, written in clear to the results, the replay cache and the report."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    escaped = "".join(f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(KEY))

    def echoing(request: dict[str, Any]) -> str:
        return rule_judge()(request).replace('"reasoning": "', f'"reasoning": "{escaped} ', 1)

    t2i = [s for s in seven_task_samples(tmp_path / "set") if s["id"] == "t2i"]
    samples = write_jsonl(tmp_path / "set" / "samples.jsonl", t2i)
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(echoing) as server:
        assert evaluate_cli(server, samples, out, "--tools", "") == 0
        assert escaped in (server.requests[0].reply or "")
    report = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(report), "--bootstrap", "10"]) == 0
    (record,) = read_records(out)
    assert record["sub_scores"][0]["reasoning"].startswith("*** ")
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert KEY.encode() not in path.read_bytes() and escaped.encode() not in path.read_bytes()
    spelled = "sk-" + "".join(f"\\u{ord(c):04x}" for c in KEY[3:]) + " and \\/ " + KEY[:3]
    assert redact_known(spelled) == "*** and \\/ sk-"
