"""Within one run every sample asks its own (issue 42): two samples that show the same image
each ask their scene graphs, and under ``paper`` (sampled at the provider's default) their
plans and judgments too; the cache still replays a re-run of the same samples. Where
``CIGEVAL_OFFICIAL_CLONE`` names a clone, two such samples send what its client sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.cli.main import main
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.judge_view import fidelity_samples
from tests.official_harness import CLONE, MODEL, OfficialClient, Script, canonical


def kinds(server: FakeOpenAIServer) -> dict[str, int]:
    counted: dict[str, int] = {}
    for request in server.requests:
        text = request_text(request.body)
        kind = "plan" if "### " in text and "RULES:" not in text else "judge"
        if "scene graph" in text.lower() and "RULES:" not in text and "### " not in text:
            kind = "scene_graph"
        counted[kind] = counted.get(kind, 0) + 1
    return counted


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        # provider-default sampling: every request is the sample's own
        ("paper", {"plan": 2, "scene_graph": 2, "judge": 2}),
        # temperature 0: the shared plan and judgment asked once, the scene graphs per sample
        ("extended", {"plan": 1, "scene_graph": 2, "judge": 1}),
    ],
)
def test_two_samples_showing_one_image_ask_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, expected: dict[str, int]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fields = fidelity_samples(tmp_path)["text_guided_ig"]
    samples = [
        sample_from_dict({"id": name, "task": "text_guided_ig", **fields}, base_dir=tmp_path)
        for name in ("first", "second")
    ]
    run_config = RunConfig(cache_dir=tmp_path / "cache", preflight=False, concurrency=1)
    config: dict[str, Any] = {"method": method, "tools": ("Scene Graph",)}
    with FakeOpenAIServer(rule_judge(tools={"*": "Scene Graph"})) as server:
        evaluator = Evaluator(
            "openai:judge", base_url=server.base_url, run_config=run_config, **config
        )
        first = evaluator.evaluate_many(samples)
        assert all(s.ok for s in first), [s.error for s in first]
        assert all(s.sub_scores[0].tool == "Scene Graph" for s in first)
        assert kinds(server) == expected
        sent = len(server.requests)
        again = Evaluator(
            "openai:judge", base_url=server.base_url, run_config=run_config, **config
        ).evaluate_many(samples)
        assert len(server.requests) == sent  # a re-run of the same samples is replayed
    assert [s.value for s in again] == [s.value for s in first]


@pytest.mark.skipif(
    not CLONE, reason="set CIGEVAL_OFFICIAL_CLONE to a clone of HITsz-TMG/Agentic-CIGEval"
)
def test_two_samples_sharing_their_images_send_what_the_official_client_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert CLONE is not None
    prompt_dir = tmp_path / "official-prompts"
    assert main(["official-prompts", CLONE, "-o", str(prompt_dir)]) == 0
    folder = tmp_path / "inputs" / "images"
    fields = fidelity_samples(folder)["text_guided_ie"]
    plan = '[{"task_id": "1", "tool": "SceneGraph"}, {"task_id": "2", "tool": "SceneGraph"}]'
    script = Script(prompt_dir, plan, {"*": '{"score": "7", "reasoning": "-"}'})
    samples = [
        sample_from_dict({"id": name, "task": "text_guided_ie", **fields}, base_dir=folder)
        for name in ("first", "second")
    ]
    run_config = RunConfig(cache_dir=tmp_path / "cache", preflight=False)
    with FakeOpenAIServer(script) as server:
        evaluator = Evaluator(
            f"openai:{MODEL}",
            base_url=server.base_url,
            run_config=run_config,
            prompt_dir=str(prompt_dir),
        )
        assert all(s.ok for s in evaluator.evaluate_many(samples))
        ours = [r.body for r in server.requests]
    client = OfficialClient(CLONE, script)
    for _ in samples:
        assert client.judge("text_guided_ie", fields, folder) == [7, 7]
    # 2 plans, 2 x 2 judges, 2 x 2 x 2 scene graphs: nothing shared between the samples
    assert script.counts(ours) == {"plan": 2, "judge": 4, "scene_graph": 8}
    assert canonical(ours) == canonical(client.bodies)
