"""The planner tolerates real models: official tool names, re-asks, then judging without a
tool when a plan entry or a tool cannot be used; never a failed sample for that.

This is the strict reading (``reply_parsing="strict"``, the extended method's); the official
reading, the paper method's default, is tested in tests/test_official_replies.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, RunConfig, Sample
from cigeval.backends import ScriptedBackend
from cigeval.errors import MissingDependency
from cigeval.messages import ModelRequest
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.testing.samples_factory import seven_task_samples
from cigeval.tools import GroundingTool, ToolContext, ToolResult
from cigeval.tools.registry import TOOLS
from tests.judge_view import RecordingDetector

#: The scripted judges never ask for Grounding, whose weights are not on this machine, so
#: the preflight (which would load them) is off.
NO_CACHE = RunConfig(use_cache=False, preflight=False)


@pytest.fixture
def seven(tmp_path: Path) -> dict[str, Sample]:
    return {r["task"]: sample_from_dict(r, base_dir=tmp_path) for r in seven_task_samples(tmp_path)}


def planner(plan: list[dict[str, Any]] | str, score: float = 6) -> Any:
    """Replies: the same plan to every planning request, ``score`` to every judge request."""
    text = plan if isinstance(plan, str) else json.dumps(plan)

    def reply(request: ModelRequest) -> str:
        asked = request_text(request)
        if "### Task" in asked:
            return text
        return rule_judge(default_score=score)(request)

    return reply


def _entry(task_id: str, tool: str) -> dict[str, str]:
    return {"task_id": task_id, "reasoning": "-", "used": "yes", "tool": tool}


def _run(sample: Sample, script: Any, **config: Any) -> tuple[Any, ScriptedBackend]:
    config.setdefault("reply_parsing", "strict")
    backend = ScriptedBackend(script)
    return Evaluator(backend, run_config=NO_CACHE, **config).evaluate(sample), backend


def _plans(backend: ScriptedBackend) -> list[str]:
    return [request_text(r) for r in backend.requests if "### Task" in request_text(r)]


def _fallbacks(score: Any) -> dict[str | None, str]:
    return {
        e.question_id: e.message
        for e in score.trace.events
        if e.type == "error" and e.stage == "fallback"
    }


def test_official_tool_names_stand_for_the_tools(seven) -> None:
    with TOOLS.scoped():
        TOOLS.register("Grounding", GroundingTool(detector=RecordingDetector()), replace=True)  # type: ignore[arg-type]
        plan = [_entry("1", "Highlight"), _entry("2", "MaskFocus")]
        # the extended method: the mask split and the detailed text it shows
        score, _ = _run(seven["mask_guided_ie"], planner(plan), method="extended")
        # keys in other spellings, as models write them
        spelled = [{"Task ID": "1", "Reasoning": "-", "Used": "yes", "Tool": "SceneGraph"}]
        graph, _ = _run(seven["text_guided_ig"], planner(spelled))
    assert score.ok and graph.ok
    tools = {s.question_id: s.tool for s in score.sub_scores}
    assert tools == {"edit_success": "Grounding", "over_editing": "Difference"}
    # Highlight grounds the instruction (no query in the official plan format)
    assert score.sub_scores[0].tool_query == seven["mask_guided_ie"].instruction
    # MaskFocus is Difference with the sample's mask
    assert "Mask region" in (score.sub_scores[1].tool_output or "")
    assert graph.sub_scores[0].tool == "Scene Graph"
    assert all(s.note is None for s in [*score.sub_scores, *graph.sub_scores])


def test_a_plan_fixed_on_the_re_ask_is_used_without_a_note(seven) -> None:
    plans = iter([json.dumps([_entry("1", "Magnifier")]), json.dumps([_entry("1", "Difference")])])

    def reply(request: ModelRequest) -> str:
        if "### Task" in request_text(request):
            return next(plans)
        return '{"score": 7, "reasoning": "ok"}'

    score, backend = _run(seven["text_guided_ig"], reply, tool_use="any")
    assert score.ok and score.sub_scores[0].tool == "Difference"
    assert score.sub_scores[0].note is None and _fallbacks(score) == {}
    assert "unknown tool 'Magnifier'" in _plans(backend)[1]


def test_an_unknown_tool_after_the_re_asks_is_judged_without_a_tool(seven) -> None:
    plan = [_entry("1", "Magnifier"), _entry("2", "Difference")]
    score, backend = _run(
        seven["text_guided_ie"], planner(plan, score=5), max_parse_retries=2, tool_use="any"
    )
    assert score.status == "ok" and score.value == pytest.approx(0.5)
    assert len(_plans(backend)) == 3  # asked, then re-asked twice
    edit, over = score.sub_scores
    assert edit.tool is None and edit.tool_steps == [] and edit.score == 5
    assert "unknown tool 'Magnifier'" in (edit.note or "") and edit.degraded
    assert over.tool == "Difference" and over.note is None and not over.degraded  # kept
    assert set(_fallbacks(score)) == {"edit_success"}
    judge = [r for r in backend.requests if "RULES:" in request_text(r)]
    edit_request = next(r for r in judge if "carries out the editing" in request_text(r))
    over_request = next(r for r in judge if "over-edited" in request_text(r))
    # the paper layout's tool text: nothing for the fallback, the focus sentence for Difference
    assert "highlighted parts" not in request_text(edit_request)
    assert "highlighted parts" in request_text(over_request)


def test_a_tool_that_is_not_offered_falls_back(seven) -> None:
    with TOOLS.scoped():
        TOOLS.register("Grounding", GroundingTool(detector=RecordingDetector()), replace=True)  # type: ignore[arg-type]
        score, _ = _run(
            seven["text_guided_ig"],
            planner([_entry("1", "Scene Graph")]),
            tools=("Grounding",),
            max_parse_retries=0,
        )
    assert score.ok and score.sub_scores[0].tool is None
    assert "not offered in this run" in (score.sub_scores[0].note or "")


def test_a_missing_entry_and_an_unreadable_plan_fall_back(seven) -> None:
    missing, _ = _run(
        seven["text_guided_ie"],
        planner([_entry("1", "Difference")]),
        max_parse_retries=1,
        tool_use="any",
    )
    assert missing.ok
    assert [s.tool for s in missing.sub_scores] == ["Difference", None]
    assert "no entry" in (missing.sub_scores[1].note or "")
    unreadable, backend = _run(
        seven["subject_driven_ie"], planner("I would use grounding for both."), max_parse_retries=1
    )
    assert unreadable.ok and len(_plans(backend)) == 2
    assert all(s.tool is None for s in unreadable.sub_scores)
    assert all("could not be read" in (s.note or "") for s in unreadable.sub_scores)
    assert set(_fallbacks(unreadable)) == {"subject_similarity", "background_preservation"}


class Boom:
    """A tool that raises what it is given."""

    name, description = "Boom", "fails"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def run(self, ctx: ToolContext) -> ToolResult:
        raise self.error


def _boom(sample: Sample, error: BaseException, **config: Any) -> tuple[Any, ScriptedBackend]:
    with TOOLS.scoped():
        TOOLS.register("Boom", Boom(error))  # type: ignore[arg-type]
        return _run(sample, planner([_entry("1", "Boom")], score=3), tools=("Boom",), **config)


def test_a_tool_failing_at_run_time_falls_back_or_fails_as_configured(seven) -> None:
    score, backend = _boom(seven["text_guided_ig"], RuntimeError("kaboom"))
    assert score.status == "ok" and score.value == pytest.approx(0.3)
    sub = score.sub_scores[0]
    assert sub.tool is None and sub.tool_output is None
    assert [(s.tool, s.error) for s in sub.tool_steps] == [
        ("Boom", "the Boom tool failed: RuntimeError: kaboom")
    ]
    assert "judged without it" in (sub.note or "") and sub.degraded
    assert "kaboom" in _fallbacks(score)["prompt_following"]
    assert "TOOL OUTPUT" not in request_text(backend.requests[-1])
    failed, _ = _boom(seven["text_guided_ig"], RuntimeError("kaboom"), tool_errors="fail")
    assert failed.status == "error" and failed.value is None
    assert "Boom" in (failed.error or "") and "kaboom" in (failed.error or "")


def test_a_missing_dependency_is_never_hidden_by_the_fallback(seven) -> None:
    error = MissingDependency("torch", "grounding", "The Boom tool")
    score, _ = _boom(seven["text_guided_ig"], error)
    assert score.status == "error" and "cigeval[grounding]" in (score.error or "")


def test_the_judge_asking_for_an_unknown_tool_gets_a_round_without_one(seven) -> None:
    judge = iter(
        [
            '{"thought": "zoom in", "tool": "Magnifier", "query": ""}',
            '{"thought": "zoom in", "tool": "Magnifier", "query": ""}',  # after the re-ask
            '{"score": 8, "reasoning": "fine"}',
        ]
    )

    def reply(request: ModelRequest) -> str:
        if "### Task" in request_text(request):
            return json.dumps([_entry("1", "None")])
        return next(judge)

    score, backend = _run(
        seven["text_guided_ig"], reply, tools=("Difference",), max_rounds=2, max_parse_retries=1
    )
    assert score.ok and score.value == pytest.approx(0.8)
    last_turn = backend.requests[-1].messages[-1].text_content()
    assert "Round 2 of 2" in last_turn and "No tool ran" in last_turn
    assert re.search(r"unknown tool 'Magnifier'", last_turn)
    assert "round 2: unknown tool 'Magnifier'" in (score.sub_scores[0].note or "")
    assert score.sub_scores[0].tool_steps == []


def test_a_tool_failing_in_a_later_round_is_reported_to_the_judge(seven) -> None:
    judge = iter(
        [
            '{"thought": "try the other tool", "tool": "Boom", "query": ""}',
            '{"score": 2, "reasoning": "judged from the images"}',
        ]
    )

    def reply(request: ModelRequest) -> str:
        if "### Task" in request_text(request):
            return json.dumps([_entry("1", "None")])
        return next(judge)

    with TOOLS.scoped():
        TOOLS.register("Boom", Boom(RuntimeError("kaboom")))  # type: ignore[arg-type]
        score, backend = _run(seven["text_guided_ig"], reply, tools=("Boom",), max_rounds=2)
    assert score.ok and score.value == pytest.approx(0.2)
    last_turn = backend.requests[-1].messages[-1].text_content()
    assert "No tool ran: the Boom tool failed: RuntimeError: kaboom" in last_turn
    sub = score.sub_scores[0]
    assert [(s.round, s.tool, s.error) for s in sub.tool_steps] == [
        (2, "Boom", "the Boom tool failed: RuntimeError: kaboom")
    ]
    assert sub.tool is None and "judged without it" in (sub.note or "")


def test_a_reply_with_neither_score_nor_tool_still_fails_the_sub_question(seven) -> None:
    def reply(request: ModelRequest) -> str:
        if "### Task" in request_text(request):
            return json.dumps([_entry("1", "None")])
        return "no idea"

    score, backend = _run(
        seven["text_guided_ig"], reply, tools=("Difference",), max_rounds=2, max_parse_retries=1
    )
    assert score.status == "error" and score.value is None
    assert "the judge answered 2 times, none usable (no score found" in (score.error or "")
    assert 'first reply: "no idea"' in (score.error or "")
    assert len(backend.requests) == 3  # the plan, then the judge asked twice
