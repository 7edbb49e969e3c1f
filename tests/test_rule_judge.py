"""rule_judge(tools=...): keys are question ids, checked against the registered tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from cigeval import ConfigError, Evaluator, RunConfig, ScriptedBackend, register_tool
from cigeval.sample import sample_from_dict
from cigeval.testing import rule_judge
from cigeval.testing.samples_factory import seven_task_samples
from cigeval.tools import ToolResult, unregister_tool


class _Marker:
    name, description = "Marker", "a test tool that only says it ran"

    async def run(self, ctx: object) -> ToolResult:
        return ToolResult(tool="Marker", text="marked")


def _tools_run(tmp_path: Path, task: str, tools: dict[str, str]) -> dict[str, str | None]:
    record = next(r for r in seven_task_samples(tmp_path) if r["task"] == task)
    sample = sample_from_dict(record, base_dir=tmp_path)
    register_tool(_Marker(), replace=True)
    try:
        evaluator = Evaluator(
            ScriptedBackend(rule_judge(tools=tools)),
            run_config=RunConfig(use_cache=False, preflight=False),
            tools=("Marker",),
            tool_use="any",
        )
        score = evaluator.evaluate(sample)
    finally:
        unregister_tool("Marker")
    assert score.status == "ok", score.error
    return {s.question_id: s.tool for s in score.sub_scores}


def test_a_question_id_plans_its_tool_and_only_its_own(tmp_path: Path) -> None:
    ran = _tools_run(tmp_path, "text_guided_ie", {"over_editing": "Marker"})
    assert ran == {"edit_success": None, "over_editing": "Marker"}


def test_a_shared_planner_entry_takes_the_tool_of_either_question(tmp_path: Path) -> None:
    ran = _tools_run(tmp_path, "multi_concept_ic", {"concept_2_similarity": "Marker"})
    assert ran == {
        "concept_1_similarity": "Marker",
        "concept_2_similarity": "Marker",
        "prompt_following": None,
    }


def test_star_plans_the_tool_for_every_question(tmp_path: Path) -> None:
    ran = _tools_run(tmp_path, "subject_driven_ie", {"*": "Marker"})
    assert ran == {"subject_similarity": "Marker", "background_preservation": "Marker"}


@pytest.mark.parametrize("key", ["minimal", "follow the text prompt", "edit-success"])
def test_a_key_that_is_no_question_id_is_an_error_naming_it(key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        rule_judge(tools={key: "Difference"})
    message = str(raised.value)
    assert repr(key) in message and "question id" in message and "over_editing" in message
