"""The fast path for open models: replicas of an OpenAI-compatible server such as vLLM.

`vllm serve <base or merged folder> --served-model-name cigeval-judge --port 8000` (one per GPU)
exposes the model under the served name; cigeval spreads its calls over the replicas round
robin. vLLM itself is not installed here: two FakeOpenAIServer instances stand in for it,
answering as the served model would.
"""

from __future__ import annotations

from pathlib import Path

from cigeval.cli import main
from cigeval.results import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl


def test_a_served_model_is_judged_with_round_robin_over_replicas(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path))
    out = tmp_path / "results.jsonl"
    judge = rule_judge(request_tool="Difference")
    with (
        FakeOpenAIServer(judge, model="cigeval-judge") as first,
        FakeOpenAIServer(judge, model="cigeval-judge") as second,
    ):
        spec = f"openai:cigeval-judge@{first.base_url},{second.base_url}"
        argv = ["evaluate", str(samples), "--model", spec, "--out", str(out)]
        tools = ["--tools", "Difference,Scene Graph"]  # no GroundingDINO weights here
        assert main([*argv, *tools, "--max-rounds", "2", "--no-cache", "--quiet"]) == 0
    requests = first.requests + second.requests
    assert len(first.requests) > 3 and len(second.requests) > 3  # both replicas served
    assert abs(len(first.requests) - len(second.requests)) <= 1
    assert {r.body["model"] for r in requests} == {"cigeval-judge"}
    records = list(read_records(out))
    assert len(records) == 7 and all(r["status"] == "ok" for r in records)
    assert {r["judge"] for r in records} == {"openai:cigeval-judge"}
