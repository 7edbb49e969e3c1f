"""Numbers you can trust: every record says where it came from, and the cache never answers
for another server, for other prompts, or with a reply that proved unusable.

Against OpenAI-compatible servers on 127.0.0.1 (:class:`FakeOpenAIServer`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cigeval
from cigeval.cli import main
from cigeval.prompts import templates_sha256
from cigeval.prompts.prompt_set import folder_sha256
from cigeval.results.jsonl import read_records
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.official_stand_in import paper_prompt_dir

TOOLS = ("--tools", "Difference,Scene Graph")


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:3])


def run(model: str, samples: Path, out: Path, *extra: str) -> int:
    argv = ["evaluate", str(samples), "--model", model, "--out", str(out), "--quiet"]
    return main([*argv, *TOOLS, *extra])


def records_of(out: Path) -> list[dict[str, Any]]:
    return list(read_records(out))


def test_a_second_server_under_the_same_name_is_asked_never_answered_from_cache(
    samples: Path, tmp_path: Path
) -> None:
    with (
        FakeOpenAIServer(rule_judge(default_score=3), model="checkpoint-a") as a,
        FakeOpenAIServer(rule_judge(default_score=9), model="checkpoint-b") as b,
    ):
        b_url = b.base_url
        assert run(f"openai:judge@{a.base_url}", samples, tmp_path / "a.jsonl") == 0
        assert run(f"openai:judge@{b.base_url}", samples, tmp_path / "b.jsonl") == 0
        sent_to_b = len(b.requests)
        # Asked again, server a answers from the cache: nothing new is sent.
        sent_to_a = len(a.requests)
        assert run(f"openai:judge@{a.base_url}", samples, tmp_path / "a2.jsonl") == 0
        assert len(a.requests) == sent_to_a
    from_a, from_b = records_of(tmp_path / "a.jsonl"), records_of(tmp_path / "b.jsonl")
    assert sent_to_b == sum(r["usage"]["calls"] - r["usage"]["cached_calls"] for r in from_b)
    assert sent_to_b == sum(r["usage"]["http_attempts"] for r in from_b)
    assert {r["score"] for r in from_a} == {0.3} and {r["score"] for r in from_b} == {0.9}
    for record in from_b:
        (judge,) = record["provenance"]["judges"]
        assert judge["endpoint"] == b_url and judge["served_models"] == ["checkpoint-b"]
        assert {e["endpoint"] for e in record["trace"] if e["type"] == "model_call"} == {b_url}


def test_a_second_server_that_is_down_gives_no_answers_from_the_first(
    samples: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer(rule_judge()) as a:
        assert run(f"openai:judge@{a.base_url}", samples, tmp_path / "a.jsonl") == 0
    with FakeOpenAIServer(rule_judge()) as b:
        down = b.base_url
    # b is gone: without the preflight every sample fails; none is answered from a's cache.
    status = run(
        f"openai:judge@{down}",
        samples,
        tmp_path / "b.jsonl",
        "--no-preflight",
        "--max-retries",
        "0",
    )
    assert status == 1
    records = records_of(tmp_path / "b.jsonl")
    assert len(records) == 3 and all(r["status"] == "error" for r in records)
    assert all("connection failed" in r["error"] for r in records)
    # no reply came, yet each sample tried: the attempts are counted
    assert all(r["usage"]["calls"] == 0 and r["usage"]["http_attempts"] >= 1 for r in records)


def test_every_record_names_endpoint_model_version_prompts_and_finish_reasons(
    samples: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge(), model="served-name") as server:
        url = server.base_url
        assert run(f"openai:judge@{url}", samples, out) == 0
    records = records_of(out)
    assert len(records) == 3
    for record in records:
        provenance = record["provenance"]
        assert provenance["cigeval_version"] == cigeval.__version__
        (judge,) = provenance["judges"]
        assert judge["judge"] == "openai:judge"
        assert judge["endpoint"] == url
        assert judge["served_models"] == ["served-name"]
        assert judge["prompts_sha256"] == templates_sha256()
        calls = [e for e in record["trace"] if e["type"] == "model_call"]
        assert calls and all(e["finish_reason"] == "stop" for e in calls)
        assert judge["finish_reasons"] == {"stop": len(calls)}
        assert all(e["model"] == "served-name" for e in calls)
        # The old fields are unchanged.
        assert record["judge"] == "openai:judge" and record["status"] == "ok"


def test_provenance_survives_without_trace_and_for_input_errors(tmp_path: Path) -> None:
    rows = [*seven_task_samples(tmp_path)[:1], {"id": "broken", "task": "text_guided_ig"}]
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        url = server.base_url
        assert run(f"openai:judge@{url}", samples, out, "--no-trace") == 1
    records = {r["id"]: r for r in records_of(out)}
    ok, broken = records["t2i"], records["broken"]
    assert "trace" not in ok and ok["provenance"]["judges"][0]["finish_reasons"]["stop"] > 0
    assert broken["provenance"]["judges"][0]["endpoint"] == url
    assert broken["provenance"]["judges"][0]["finish_reasons"] == {}


def test_credentials_in_the_url_are_never_recorded(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        url = server.base_url
        secret_url = url.replace("http://", "http://user:s3cr3t-pw@")
        assert run(f"openai:judge@{secret_url}", samples, out) == 0
    text = out.read_text()
    assert "s3cr3t-pw" not in text
    assert records_of(out)[0]["provenance"]["judges"][0]["endpoint"] == url


def test_other_prompt_templates_are_not_answered_from_the_cache(
    samples: Path, tmp_path: Path
) -> None:
    # The same wording as the built-in re-ask prompt: the rendered messages do not change,
    # but the templates in use do. (A paper run's folder holds every paper template.)
    variant = paper_prompt_dir(tmp_path / "variant")
    builtin = Path(cigeval.__file__).parent / "prompts" / "reask.j2"
    (variant / "reask.j2").write_text(builtin.read_text() + "\n")
    with FakeOpenAIServer(rule_judge()) as server:
        assert run(f"openai:judge@{server.base_url}", samples, tmp_path / "a.jsonl") == 0
        before = len(server.requests)
        argv = ["--prompt-dir", str(variant)]
        assert run(f"openai:judge@{server.base_url}", samples, tmp_path / "b.jsonl", *argv) == 0
        assert len(server.requests) > before
    hashes = {
        r["provenance"]["judges"][0]["prompts_sha256"]
        for name in ("a.jsonl", "b.jsonl")
        for r in records_of(tmp_path / name)
    }
    assert hashes == {templates_sha256(), templates_sha256(variant)} and len(hashes) == 2
    sets = {
        r["provenance"]["prompt_set"]
        for n in ("a", "b")
        for r in records_of(tmp_path / f"{n}.jsonl")
    }
    assert sets == {"paraphrase", f"custom:{folder_sha256(variant)[:16]}"}


def cut_replies(body: dict[str, Any]) -> str:
    """The rule judge's reply, cut after 8 characters (as a token limit would)."""
    return rule_judge()(body)[:8]


def test_a_reply_cut_at_the_token_limit_is_named_in_the_error(
    samples: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(cut_replies, finish_reason="length") as server:
        status = run(
            f"openai:judge@{server.base_url}", samples, out, "--max-tokens", "5", "--tools", ""
        )
        budgets = sorted({r.body["max_tokens"] for r in server.requests})
    assert status == 1
    assert budgets == [5, 10, 20]  # asked again with twice the budget, up to 4 x --max-tokens
    for record in records_of(out):
        assert record["status"] == "error"
        assert "the reply was cut off at 20 tokens (finish_reason=length)" in record["error"]
        assert "--max-tokens-cap" in record["error"]
        calls = [e for e in record["trace"] if e["type"] == "model_call"]
        assert {e["finish_reason"] for e in calls} == {"length"}
        assert record["usage"]["cut_off_replies"] == len(calls)
        # A cut reply is asked again as it was, with a larger budget: no re-ask message.
        assert all(
            e["messages"] == calls[0]["messages"]
            for e in calls
            if e["question_id"] == calls[0]["question_id"]
        )


def test_retry_errors_asks_the_model_again_and_recovers(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    healthy = rule_judge()
    state = {"broken": True}

    def judge(body: dict[str, Any]) -> str:
        return "I would rather not say." if state["broken"] else healthy(body)

    with FakeOpenAIServer(judge) as server:
        model = f"openai:judge@{server.base_url}"
        assert run(model, samples, out, "--tools", "") == 1
        assert all(r["status"] == "error" for r in records_of(out))
        first_run = [json.dumps(r.body, sort_keys=True) for r in server.requests]
        state["broken"] = False
        asked_before = len(server.requests)
        assert run(model, samples, out, "--tools", "", "--retry-errors") == 0
        second_run = [json.dumps(r.body, sort_keys=True) for r in server.requests[asked_before:]]
    records = records_of(out)
    assert sorted(r["id"] for r in records) == ["mie", "t2i", "tie"]
    assert all(r["status"] == "ok" for r in records)
    # The first question of each sample was sent again, word for word: it was asked, not
    # answered from the cache with the unusable reply of the first run.
    assert set(second_run) & set(first_run)
    sent = sum(r["usage"]["calls"] - r["usage"]["cached_calls"] for r in records)
    assert sent == len(second_run) >= 3


def test_retry_errors_bypasses_even_usable_cached_answers(tmp_path: Path) -> None:
    # A sample that failed for a reason outside the replies (here a missing image) is asked
    # afresh when retried: its cached answers are not replayed.
    rows = seven_task_samples(tmp_path)[:1]
    rows.append({**rows[0], "id": "late", "images": {"output": "late.png"}})
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        model = f"openai:judge@{server.base_url}"
        assert run(model, samples, out, "--tools", "") == 1
        (tmp_path / "late.png").write_bytes((tmp_path / "output.png").read_bytes())
        before = len(server.requests)
        assert run(model, samples, out, "--tools", "", "--retry-errors") == 0
        texts = [request_text(r.body) for r in server.requests[before:]]
    late = next(r for r in records_of(out) if r["id"] == "late")
    assert late["status"] == "ok" and late["usage"]["cached_calls"] == 0
    assert len(texts) == late["usage"]["calls"]  # same requests as t2i's, yet sent again
