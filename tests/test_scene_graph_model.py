"""Scene graphs by a model apart from the judge (``--scene-graph-model``), as the paper used
GPT-4o scene graphs for every backbone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.backends.registry import BACKENDS
from cigeval.messages import ModelRequest, Usage
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import write_jsonl
from tests.cli_support import evaluate_cli
from tests.judge_view import fidelity_samples

GRAPH = {"objects": [{"name": "apple", "attributes": ["red"]}], "relationships": []}


def _judge(request: ModelRequest) -> str:
    text = request_text(request)
    if "### Task" in text:
        return json.dumps([{"task_id": "1", "reasoning": "-", "used": "yes", "tool": "SceneGraph"}])
    if "RULES:" not in text:
        raise AssertionError("the judge was asked for a scene graph")
    return rule_judge(default_score=8)(request)


@pytest.fixture
def grapher() -> Any:
    """A backend provider ``graphs:`` whose model answers every request with GRAPH."""
    made: list[ScriptedBackend] = []

    def factory(model: str, *, base_url: Any = None, run_config: Any = None) -> ScriptedBackend:
        backend = ScriptedBackend(lambda request: json.dumps(GRAPH), name=model, usage=Usage(5, 7))
        made.append(backend)
        return backend

    with BACKENDS.scoped():
        BACKENDS.register("graphs", factory)
        yield made


def test_the_scene_graph_model_writes_the_graphs(tmp_path: Path, grapher: Any) -> None:
    fields = fidelity_samples(tmp_path)["text_guided_ig"]
    sample = sample_from_dict({"id": "s", "task": "text_guided_ig", **fields}, base_dir=tmp_path)
    judge = ScriptedBackend(_judge, name="judge")
    evaluator = Evaluator(
        judge,
        run_config=RunConfig(use_cache=False, preflight=False),
        scene_graph_model="graphs:gpt-4o",
    )
    score = evaluator.evaluate(sample)
    assert score.ok, score.error
    (helper,) = grapher
    assert len(helper.requests) == 1  # one image, one graph
    assert "scene graph" in request_text(helper.requests[0]).lower()
    sub = score.sub_scores[0]
    assert sub.tool == "Scene Graph" and '"apple"' in (sub.tool_output or "")
    judged = [r for r in judge.requests if "RULES:" in request_text(r)]
    assert '"apple"' in request_text(judged[0])
    calls = [e for e in score.trace.model_calls() if e.purpose == "scene_graph"]
    assert [c.model for c in calls] == ["scripted:gpt-4o"]
    record = score.to_record()
    assert record["config"]["scene_graph_model"] == "graphs:gpt-4o"
    assert record["provenance"]["scene_graph_model"] == "scripted:gpt-4o"
    assert record["usage"]["calls"] == 3  # plan, scene graph, judge
    assert record["usage"]["completion_tokens"] == 7


def test_without_it_the_judge_writes_the_graphs(tmp_path: Path) -> None:
    fields = fidelity_samples(tmp_path)["text_guided_ig"]
    sample = sample_from_dict({"id": "s", "task": "text_guided_ig", **fields}, base_dir=tmp_path)

    def judge(request: ModelRequest) -> str:
        text = request_text(request)
        if "### Task" in text:
            return json.dumps([{"task_id": "1", "used": "yes", "tool": "SceneGraph"}])
        return rule_judge()(request)

    backend = ScriptedBackend(judge)
    score = Evaluator(backend, run_config=RunConfig(use_cache=False, preflight=False)).evaluate(
        sample
    )
    assert score.ok and "scene_graph_model" not in score.to_record()["provenance"]
    assert [e.purpose for e in score.trace.model_calls()].count("scene_graph") == 1


def test_the_flag_reaches_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fields = fidelity_samples(tmp_path)["text_guided_ig"]
    samples = write_jsonl(tmp_path / "s.jsonl", [{"id": "s", "task": "text_guided_ig", **fields}])
    out = tmp_path / "r.jsonl"

    def judge_or_grapher(request: Any) -> str:  # one server answers both models
        if "RULES:" in request_text(request) or "### Task" in request_text(request):
            return _judge(request)
        return json.dumps(GRAPH)

    with FakeOpenAIServer(judge_or_grapher) as server:
        spec = f"openai:graph-model@{server.base_url}"
        assert evaluate_cli(server, samples, out, "--scene-graph-model", spec, "--no-cache") == 0
    record = json.loads(out.read_text().splitlines()[0])
    assert record["config"]["scene_graph_model"] == spec
    assert record["provenance"]["scene_graph_model"] == "openai:graph-model"
    # the scene-graph model's requests count in the sample's usage like the judge's
    graphs = [r for r in server.requests if r.body.get("model") == "graph-model"]
    assert graphs and record["usage"]["http_attempts"] == len(server.requests)
