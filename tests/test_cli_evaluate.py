"""``cigeval evaluate`` end to end against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cigeval.cli import main
from cigeval.results.jsonl import read_records
from cigeval.tasks import get_task
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

SECRET = "sk-test-SECRET-key-123456"


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def run(server: FakeOpenAIServer, samples: Path, out: Path, *extra: str) -> int:
    return evaluate_cli(server, samples, out, *extra)


def test_seven_tasks_through_the_cli(env: Path, capsys):
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env))
    out = env / "results.jsonl"
    scores = {"edit_success": 3, "over_editing": 9, "prompt_following": 8}
    with FakeOpenAIServer(rule_judge(scores, tools={"over_editing": "Difference"})) as server:
        status = run(server, samples, out, "--concurrency", "4")
        requests = list(server.requests)
    assert status == 0
    records = {r["id"]: r for r in read_records(out)}
    assert len(records) == 7
    for sample in seven_task_samples(env):
        record = records[sample["id"]]
        spec = get_task(sample["task"])
        assert record["status"] == "ok"
        assert record["task"] == sample["task"]
        assert len(record["sub_scores"]) == len(spec.sub_questions)
        values = [s["score"] for s in record["sub_scores"]]
        assert record["score"] == pytest.approx(min(values) / 10)
        assert {"question", "score", "reasoning", "tool"} <= set(record["sub_scores"][0])
    assert records["t2i"]["model"] == "SD" and records["t2i"]["human"] == 0.5
    assert records["tie"]["score"] == pytest.approx(0.3)
    # the paper method runs the planned Difference in mask-guided editing only
    assert records["mie"]["sub_scores"][1]["tool"] == "Difference"
    over = records["tie"]["sub_scores"][1]
    assert over["tool"] is None and over["degraded"] and "only in mask_guided_ie" in over["note"]
    # one tool plan per sample + one judge call per sub-question, nothing else
    n_questions = sum(len(get_task(s["task"]).sub_questions) for s in seven_task_samples(env))
    plans = [r for r in requests if "### Task" in request_text(r.body)]
    assert len(plans) == 7
    assert sum(r["usage"]["calls"] for r in records.values()) == 7 + n_questions
    cached = sum(r["usage"]["cached_calls"] for r in records.values())
    # identical requests (same images and instruction in two tasks) are answered once
    assert len(requests) + cached == 7 + n_questions
    # images arrive as data URIs; the judge of 'tie' got source and output
    # no sampling parameter (the paper's method: the provider's defaults)
    assert all(not {"temperature", "max_tokens", "seed"} & set(r.body) for r in requests)
    assert any(len(r.image_urls()) == 2 for r in requests)
    # the key is sent to the server but written nowhere
    assert requests[0].header("Authorization") == f"Bearer {SECRET}"
    for path in [out, *Path(env / "cache").rglob("*")]:
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="ignore")
    summary = capsys.readouterr().err
    assert "7 evaluated (7 ok, 0 error)" in summary


def test_second_run_makes_no_model_calls_and_resume_completes(env: Path):
    records = seven_task_samples(env)
    samples = write_jsonl(env / "samples.jsonl", records)
    out = env / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert run(server, samples, out) == 0
        first_calls = len(server.requests)
        # a fresh output file: every answer comes from the cache
        assert run(server, samples, env / "again.jsonl") == 0
        assert len(server.requests) == first_calls
        # simulate a killed run: keep 3 records and a torn line
        lines = out.read_text().splitlines(keepends=True)
        out.write_text("".join(lines[:3]) + lines[3][:40])
        assert run(server, samples, out, "--no-cache") == 0
    ids = [r["id"] for r in read_records(out)]
    assert sorted(ids) == sorted(r["id"] for r in records)
    assert len(ids) == len(set(ids))


def test_bad_samples_are_error_records_and_exit_1(env: Path):
    good = seven_task_samples(env)
    (env / "empty.png").write_bytes(b"")
    (env / "corrupt.png").write_bytes(b"not an image at all")
    bad = [
        {"id": "empty", "task": "text_guided_ig", "prompt": "x", "images": {"output": "empty.png"}},
        {
            "id": "corrupt",
            "task": "text_guided_ig",
            "prompt": "x",
            "images": {"output": "corrupt.png"},
        },
        {"id": "unknown", "task": "video_gen", "prompt": "x", "images": {"output": "output.png"}},
    ]
    samples = write_jsonl(env / "samples.jsonl", [good[0], *bad, good[2]])
    with samples.open("a") as handle:
        handle.write("{not json\n")
    out = env / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert run(server, samples, out) == 1
    records = {r["id"]: r for r in read_records(out)}
    assert len(records) == 6
    assert records["t2i"]["status"] == "ok" and records["tie"]["status"] == "ok"
    assert "zero-byte" in records["empty"]["error"]
    assert "corrupt" in records["corrupt"]["error"]
    assert "unknown task" in records["unknown"]["error"]
    assert "invalid JSON" in records["@line:6"]["error"]


def test_usage_errors_exit_2(env: Path, capsys):
    assert (
        main(
            [
                "evaluate",
                str(env / "missing.jsonl"),
                "--model",
                "openai:x",
                "--out",
                str(env / "o.jsonl"),
            ]
        )
        == 2
    )
    samples = write_jsonl(env / "s.jsonl", seven_task_samples(env)[:1])
    assert (
        main(["evaluate", str(samples), "--model", "nonsense:x", "--out", str(env / "o.jsonl")])
        == 2
    )
    assert (
        main(
            [
                "evaluate",
                str(samples),
                "--model",
                "openai:x",
                "--out",
                str(env / "o.jsonl"),
                "--rubric",
                "nope",
            ]
        )
        == 2
    )
    with pytest.raises(SystemExit) as exc:
        main(["evaluate"])
    assert exc.value.code == 2


def test_ensemble_through_the_cli(env: Path, capsys):
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:1])
    out = env / "results.jsonl"
    with (
        FakeOpenAIServer(rule_judge(default_score=6)) as one,
        FakeOpenAIServer(rule_judge(default_score=8)) as two,
    ):
        status = main(
            [
                "evaluate",
                str(samples),
                "--model",
                f"openai:a@{one.base_url}",
                "--model",
                f"openai:b@{two.base_url}",
                "--combine",
                "median",
                "--tools",
                "Difference,Scene Graph",  # no Grounding weights here; both servers preflighted
                "--out",
                str(out),
                "--quiet",
            ]
        )
    assert status == 0
    (record,) = read_records(out)
    assert record["score"] == pytest.approx(0.7)
    assert [j["score"] for j in record["details"]["judgments"]] == [0.6, 0.8]
    assert record["spread"]["range"] == pytest.approx(0.2)
    assert record["config"]["ensemble"]["combine"] == "median"
    json.dumps(record)
    assert "ensemble: 2 judgments per sample" in capsys.readouterr().err


def test_price_table_gives_the_cost_of_sent_calls(env: Path, capsys):
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:1])
    prices = env / "prices.json"
    # USD per 1M tokens, chosen so each token costs a round amount
    prices.write_text(json.dumps({"fake-model": {"prompt": 1e6, "completion": 2e6}}))
    with FakeOpenAIServer(rule_judge(), usage=(11, 7)) as server:
        status = run(server, samples, env / "r.jsonl", "--price-table", str(prices), "--no-cache")
        err = capsys.readouterr().err
        bad = env / "bad.json"
        bad.write_text('{"fake-model": 3}')
        assert run(server, samples, env / "r2.jsonl", "--price-table", str(bad)) == 2
    assert status == 0
    # text_guided_ig: 1 plan + 1 judge call, each 11 prompt + 7 completion tokens
    assert "tokens: 22 prompt + 14 completion" in err
    assert "cost: $50.0000" in err
    assert "price table must map" in capsys.readouterr().err


def test_recorded_errors_keep_exit_1_until_retried(env: Path, capsys):
    records = seven_task_samples(env)[:2]
    records[1] = dict(records[1], images={**records[1]["images"], "source": "late.png"})
    samples = write_jsonl(env / "samples.jsonl", records)
    out = env / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert run(server, samples, out) == 1
        (env / "late.png").write_bytes((env / "source.png").read_bytes())  # the fix
        # nothing new to do when images are not rechecked (a changed image is judged again:
        # tests/runs/test_hostile_inputs.py), the error is still there
        assert run(server, samples, out, "--no-recheck-images") == 1
        assert "recorded as error by an earlier run" in capsys.readouterr().err
        assert run(server, samples, out, "--retry-errors", "--no-recheck-images") == 0
    final = list(read_records(out))
    assert sorted(r["id"] for r in final) == ["mie", "t2i"]
    assert all(r["status"] == "ok" for r in final)


def test_tools_flag_enables_ocr_and_rejects_unknown_tools(env: Path, capsys):
    from cigeval.tools import registered_tools, unregister_tool

    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:1])
    with FakeOpenAIServer(rule_judge()) as server:
        assert run(server, samples, env / "a.jsonl", "--tools", "Magic Wand") == 2
        assert "unknown tool 'Magic Wand'" in capsys.readouterr().err
        try:
            assert run(server, samples, env / "b.jsonl", "--tools", "Grounding,OCR") == 0
            assert "OCR" in {t.name for t in registered_tools()}
            plan = next(r for r in server.requests if "### Task" in request_text(r.body))
            # the offered tools in one numbered list, the official ones under the official names
            text = request_text(plan.body)
            assert "1. **Highlight**:" in text and "2. **OCR**:" in text
            assert "Highlight or OCR or None" in text
            assert "MaskFocus" not in text and "SceneGraph" not in text
        finally:
            unregister_tool("OCR")
