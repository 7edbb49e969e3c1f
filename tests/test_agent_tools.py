"""The agent with the real built-in tools: tiny GroundingDINO, Difference, Scene Graph."""

from __future__ import annotations

from pathlib import Path

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.testing.samples_factory import seven_task_samples
from cigeval.tools import GroundingConfig
from cigeval.tools import grounding as grounding_module
from tests.tiny_grounding import build_tiny_grounding_dino


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("gdino")
    build_tiny_grounding_dino(folder)
    yield str(folder)
    grounding_module.clear_detector_cache()


def test_every_builtin_tool_through_the_agent(tmp_path: Path, tiny_checkpoint: str):
    records = {r["task"]: r for r in seven_task_samples(tmp_path)}
    sample = sample_from_dict(records["multi_concept_ic"], base_dir=tmp_path)
    script = rule_judge(
        tools={
            "concept_1_similarity": "Grounding",
            "concept_2_similarity": "Scene Graph",
            "prompt_following": "Difference",
        }
    )
    backend = ScriptedBackend(script)
    evaluator = Evaluator(
        backend,
        run_config=RunConfig(cache_dir=tmp_path / "cache"),
        method="extended",  # Difference offered everywhere, tool outputs in detail
        grounding=GroundingConfig(
            checkpoint=tiny_checkpoint, box_threshold=0.0, text_threshold=0.0
        ),
    )
    score = evaluator.evaluate(sample)
    assert score.status == "ok", score.error
    tools = {s.question_id: s.tool for s in score.sub_scores}
    assert tools == {
        "concept_1_similarity": "Grounding",
        "concept_2_similarity": "Scene Graph",
        "prompt_following": "Difference",
    }
    grounding = score.sub_scores[0]
    # the random detector finds boxes at threshold 0: the judge sees highlighted images
    assert grounding.tool_images and grounding.tool_output
    judge_texts = [request_text(r) for r in backend.requests if "RULES:" in request_text(r)]
    assert any("focus on the highlighted parts" in t for t in judge_texts)
    # Difference needs two images; prompt following shows one, so nothing is highlighted
    assert "two" in (score.sub_scores[2].tool_output or "")
    # one scene-graph call per distinct image the question shows
    purposes = [e.purpose for e in score.trace.model_calls()]
    assert purposes.count("scene_graph") == 2  # subject_2 and output
    assert purposes.count("plan") == 1 and purposes.count("judge") == 3
    observations = [e for e in score.trace.events if e.type == "observation"]
    assert {o.tool for o in observations} == {"Grounding", "Scene Graph", "Difference"}
