"""A judged run of every task with two generators and two judges, made offline once per module
through ``cigeval evaluate`` (a real HTTP server on 127.0.0.1 answering with rule_judge), with
hostile model text in a prompt and in the reasoning, and one unreadable results line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

HOSTILE_PROMPT = "<script>window.__pwned=1</script> a red square"
HOSTILE_REASONING = "</script><img src=x onerror=window.__pwned=2> looks fine"
GENERATORS = ("GenA", "GenB")


@dataclass
class JudgedRun:
    """The run's folder, its samples and the two results files."""

    folder: Path
    samples: list[dict]
    first: Path
    second: Path


def _hostile_judge(request):
    reply = rule_judge({"edit_success": 3}, tools={"over_editing": "Difference"})(request)
    if '"score"' in reply:
        answer = json.loads(reply)
        answer["reasoning"] = HOSTILE_REASONING
        reply = json.dumps(answer)
    return reply


def _samples(folder: Path) -> list[dict]:
    out = []
    for generator in GENERATORS:
        for sample in seven_task_samples(folder):
            sample = {**sample, "id": f"{generator}-{sample['id']}", "model": generator}
            sample["human"] = 0.2 if generator == "GenA" else 0.9
            out.append(sample)
    out[0]["prompt"] = HOSTILE_PROMPT
    return out


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory) -> JudgedRun:
    folder = tmp_path_factory.mktemp("run")
    samples = _samples(folder)
    path = write_jsonl(folder / "samples.jsonl", samples)
    first, second = folder / "judge-a.jsonl", folder / "judge-b.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test")
        patch.setenv("CIGEVAL_CACHE_DIR", str(folder / "cache"))
        with FakeOpenAIServer(_hostile_judge) as server:
            assert evaluate_cli(server, path, first, "--tools", "Difference") == 0
        with FakeOpenAIServer(rule_judge(default_score=5)) as server:
            status = evaluate_cli(
                server, path, second, "--tools", "Difference", model="openai:second-judge"
            )
            assert status == 0
    with first.open("ab") as handle:
        handle.write(b"{not json\n")
    return JudgedRun(folder, samples, first, second)
