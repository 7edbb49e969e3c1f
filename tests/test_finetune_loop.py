"""The whole open-model loop on CPU, offline: an agent run with two rounds against an
OpenAI-compatible server, the trajectory export, `cigeval finetune` on a tiny random
Qwen2.5-VL, and `cigeval evaluate --model hf:<output folder>` judging with the result.

The tiny model's weights are random, so its replies are gibberish (error records): the
test checks the plumbing, never the quality of a judge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.results import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

pytest.importorskip("trl")
pytest.importorskip("peft")


def _assistant_texts(row: dict[str, Any]) -> list[str]:
    return [
        part["text"]
        for message in row["messages"]
        if message["role"] == "assistant"
        for part in message["content"]
    ]


def test_agent_run_export_finetune_and_judge_with_the_tuned_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from cigeval.training import save_random_qwen_vl

    samples = [s for s in seven_task_samples(tmp_path / "data") if s["id"] in ("tie", "mie")]
    samples_file = write_jsonl(tmp_path / "data" / "samples.jsonl", samples)
    results = tmp_path / "results.jsonl"
    judge = rule_judge(request_tool="Difference")
    with FakeOpenAIServer(judge) as server:
        # Difference in both editing tasks (the paper method runs it in mask-guided only)
        flags = ("--max-rounds", "2", "--tool-use", "any")
        assert evaluate_cli(server, samples_file, results, *flags) == 0

    # the export: each sub-question a multi-step conversation with the tool's images
    export = tmp_path / "train.jsonl"
    assert main(["meta", "export-trajectories", str(results), "--out", str(export)]) == 0
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    judged = [r for r in rows if r.get("purpose") == "judge"]
    assert judged and {r["id"] for r in judged} == {"tie", "mie"}
    for row in judged:  # round 1 asks for the tool, round 2 sees its output and scores
        assert row["calls"] == 2, row["question_id"]
        roles = [m["role"] for m in row["messages"]]
        # the paper layout: no system message, the first request is one user message
        assert roles == ["user", "assistant", "user", "assistant"]
        assert '"tool": "Difference"' in row["messages"][1]["content"][0]["text"]
        assert any(p["type"] == "image" for p in row["messages"][2]["content"])
        assert '"score"' in row["messages"][3]["content"][0]["text"]
    sample = tmp_path / "per_sample.jsonl"
    assert (
        main(["meta", "export-trajectories", str(results), "--out", str(sample), "--per", "sample"])
        == 0
    )
    for row in map(json.loads, sample.read_text().splitlines()):
        replies = _assistant_texts(row)
        asks = [r for r in replies if '"tool": "Difference"' in r]
        scores = [r for r in replies if '"score"' in r]
        assert asks and len(scores) == len(asks), replies  # a tool request, then a score
        observed = [
            m
            for m in row["messages"]
            if m["role"] == "user"
            and any("TOOL OUTPUT (Difference)" in p.get("text", "") for p in m["content"])
        ]
        assert observed and all(any(p["type"] == "image" for p in m["content"]) for m in observed)
        placeholders = sum(p["type"] == "image" for m in row["messages"] for p in m["content"])
        assert placeholders == len(row["images"]) > 0
        assert all(Path(path).is_file() for path in row["images"])
        stored = tmp_path / "results.images"
        assert any(Path(path).is_relative_to(stored) for path in row["images"])  # tool images

    # fine-tune a tiny local model on it for two steps
    base = save_random_qwen_vl(tmp_path / "base")
    out = tmp_path / "tuned"
    argv = ["finetune", str(export), "--base", f"hf:{base}", "--out", str(out)]
    argv += ["--max-steps", "2", "--gradient-accumulation", "1", "--quiet"]
    assert main(argv) == 0
    assert (out / "adapter" / "adapter_model.safetensors").stat().st_size > 0
    assert (out / "merged" / "model.safetensors").stat().st_size > 0

    # judge with it: the records name the tuned model
    again = tmp_path / "tuned_results.jsonl"
    evaluate = ["evaluate", str(samples_file), "--model", f"hf:{out}", "--out", str(again)]
    evaluate += ["--tools", "", "--max-tokens", "8", "--max-parse-retries", "0", "--no-cache"]
    assert main([*evaluate, "--quiet"]) in (0, 1)  # random weights: unparseable replies
    records = list(read_records(again))
    assert len(records) == 2
    for record in records:
        assert record["judge"] == f"hf:{out}"
        calls = [e for e in record["trace"] if e["type"] == "model_call"]
        assert calls and all(c["model"] == f"hf:{out}" for c in calls)
