"""The agentic CIGEval rubric end to end with a scripted judge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cigeval import EnsembleConfig, Evaluator, RunConfig, Sample
from cigeval.backends import ScriptedBackend
from cigeval.errors import BackendError
from cigeval.messages import ModelRequest
from cigeval.sample import sample_from_dict
from cigeval.tasks import TASK_IDS, get_task
from cigeval.testing import request_text, rule_judge
from cigeval.testing.samples_factory import seven_task_samples
from cigeval.tools import ToolResult, register_tool, unregister_tool
from cigeval.trace import Trace
from tests.official_stand_in import paper_prompt_dir

#: The scripted judges never ask for Grounding, whose weights are not on this machine, so
#: the preflight (which would load them) is off.
NO_CACHE = RunConfig(use_cache=False, preflight=False)


def make_evaluator(script: Any, **kwargs: Any) -> tuple[Evaluator, ScriptedBackend]:
    backend = ScriptedBackend(script)
    return Evaluator(backend, run_config=NO_CACHE, **kwargs), backend


def samples(folder: Path) -> dict[str, Sample]:
    return {r["task"]: sample_from_dict(r, base_dir=folder) for r in seven_task_samples(folder)}


@pytest.fixture
def seven(tmp_path: Path) -> dict[str, Sample]:
    return samples(tmp_path)


@pytest.mark.parametrize("task", TASK_IDS)
def test_every_task_one_plan_and_one_judge_call_per_sub_question(seven, task):
    scores = {
        "prompt_following": 9,
        "edit_success": 4,
        "over_editing": 6,
        "subject_similarity": 5,
        "concept_similarity": 6,
        "background_preservation": 8,
        "control_following": 3,
    }
    ev, backend = make_evaluator(rule_judge(scores))
    score = ev.evaluate(seven[task])
    spec = get_task(task)
    assert score.status == "ok", score.error
    assert [s.question_id for s in score.sub_scores] == [q.id for q in spec.sub_questions]
    expected = min(scores[q.template] for q in spec.sub_questions) / 10
    assert score.value == pytest.approx(expected)
    purposes = [e.purpose for e in score.trace.model_calls()]
    assert purposes.count("plan") == 1
    assert purposes.count("judge") == len(spec.sub_questions)
    assert len(backend.requests) == 1 + len(spec.sub_questions)
    assert score.usage["calls"] == len(backend.requests)
    # the judge of each sub-question saw exactly the images the sub-question names
    judge_requests = [r for r in backend.requests if "RULES:" in request_text(r)]
    image_counts = sorted(len(r.messages[-1].images()) for r in judge_requests)
    assert image_counts == sorted(len(q.image_roles) for q in spec.sub_questions)
    record = score.to_record()
    json.dumps(record)  # serialisable
    assert Trace.from_jsonl(score.trace.to_jsonl()).events == score.trace.events


def test_plan_is_matched_by_task_id_not_position(seven):
    plan = json.dumps(
        [
            {"task_id": "2", "reasoning": "changes", "used": "yes", "tool": "difference"},
            {"task_id": "1", "reasoning": "none", "used": "no", "tool": "None"},
        ]
    )
    calls = []

    def reply(request: ModelRequest) -> str:
        text = request_text(request)
        calls.append(text)
        return plan if "### Task" in text else '{"score": 6, "reasoning": "ok"}'

    # the strict reading (the official one reads plans by position: test_official_replies.py)
    ev, _ = make_evaluator(reply, tool_use="any", reply_parsing="strict")
    score = ev.evaluate(seven["text_guided_ie"])
    tools = {s.question_id: s.tool for s in score.sub_scores}
    assert tools == {"edit_success": None, "over_editing": "Difference"}


def test_highlight_hint_only_when_something_was_highlighted(seven):
    class Marker:
        name, description = "Marker", "test tool"

        def __init__(self, highlighted: bool) -> None:
            self.highlighted = highlighted

        async def run(self, ctx):
            return ToolResult(tool="Marker", text="observed", highlighted=self.highlighted)

    for highlighted in (True, False):
        register_tool(Marker(highlighted), replace=True)
        try:
            ev, backend = make_evaluator(
                rule_judge(tools={"prompt_following": "Marker"}),
                tools=("Marker",),
                tool_text="detailed",
                request_layout="cigeval",  # its tool header (the paper layout has no header)
            )
            score = ev.evaluate(seven["text_guided_ig"])
        finally:
            unregister_tool("Marker")
        judge_text = request_text(backend.requests[-1])
        assert score.sub_scores[0].tool == "Marker"
        assert ("focus on the highlighted parts" in judge_text) is highlighted
        assert "observed" in judge_text


def test_invalid_reply_is_reasked_with_the_error_then_parsed(seven):
    replies = iter(["plan"])  # not used: no tools offered
    del replies
    script = [
        "I think it is quite good.",
        '{"score": 12, "reasoning": "great"}',
        'Sure: ```json\n{"score": "8/10", "reasoning": "fine"}\n```',
    ]
    ev, backend = make_evaluator(script, tools=(), reply_parsing="strict")
    score = ev.evaluate(seven["text_guided_ig"])
    assert score.status == "ok" and score.value == pytest.approx(0.8)
    assert len(backend.requests) == 3
    second = request_text(backend.requests[1])
    assert "no score found" in second
    third = request_text(backend.requests[2])
    assert "outside the allowed range" in third
    assert [e.attempt for e in score.trace.model_calls()] == [1, 2, 3]


def test_parse_error_after_retries_is_an_error_record_not_a_number(seven):
    ev, backend = make_evaluator(
        ["no idea"] * 3, tools=(), max_parse_retries=2, reply_parsing="strict"
    )
    score = ev.evaluate(seven["text_guided_ig"])
    assert score.status == "error" and score.value is None
    assert "ParseError" in (score.error or "")
    assert score.sub_scores[0].score is None
    assert len(backend.requests) == 3


def test_backend_failure_is_an_error_record(seven):
    ev, _ = make_evaluator([BackendError("server down")], tools=())
    score = ev.evaluate(seven["text_guided_ig"])
    assert score.status == "error" and "server down" in (score.error or "")


def test_more_rounds_when_the_judge_asks_for_another_tool(seven):
    class Counter:
        name, description = "Counter", "counts"
        runs = 0

        async def run(self, ctx):
            Counter.runs += 1
            return ToolResult(tool="Counter", text=f"run {Counter.runs}")

    register_tool(Counter(), replace=True)
    judge_replies = iter(
        [
            '{"thought": "need a closer look", "tool": "Counter", "query": ""}',
            '{"score": 5, "reasoning": "now sure"}',
        ]
    )

    def reply(request):
        text = request_text(request)
        if "### Task" in text:
            return '[{"task_id": "1", "reasoning": "-", "used": "no", "tool": "None"}]'
        return next(judge_replies)

    try:
        ev, backend = make_evaluator(reply, tools=("Counter",), max_rounds=2)
        score = ev.evaluate(seven["text_guided_ig"])
    finally:
        unregister_tool("Counter")
    assert score.status == "ok" and score.value == pytest.approx(0.5)
    assert Counter.runs == 1
    assert score.sub_scores[0].tool == "Counter"
    last_turn = backend.requests[-1].messages[-1].text_content()
    assert "run 1" in last_turn and "Round 2 of 2" in last_turn
    assert "another tool would settle it" not in last_turn  # no rounds left to ask for


def test_missing_image_and_missing_field_are_named_errors(tmp_path: Path):
    records = seven_task_samples(tmp_path)
    broken_image = dict(
        records[2], id="broken", images={"source": "nope.png", "output": "output.png"}
    )
    no_field = {k: v for k, v in records[0].items() if k != "prompt"} | {"id": "nofield"}
    ev, backend = make_evaluator(rule_judge())
    first = ev.evaluate(sample_from_dict(broken_image, base_dir=tmp_path))
    second = ev.evaluate(sample_from_dict(no_field, base_dir=tmp_path))
    third = ev.evaluate({"id": "badtask", "task": "painting", "images": {}})
    assert first.status == "error" and "broken" in first.error and "nope.png" in first.error
    assert second.status == "error" and "prompt" in second.error and "nofield" in second.error
    assert third.status == "error" and "unknown task" in third.error and "badtask" in third.error
    assert backend.requests == []


def test_ensemble_keeps_individual_judgments_and_spread(seven):
    a = ScriptedBackend(rule_judge(default_score=4), name="a")
    b = ScriptedBackend(rule_judge(default_score=8), name="b")
    ev = Evaluator(
        [a, b],
        run_config=NO_CACHE,
        tools=(),
        ensemble=EnsembleConfig(combine="mean", level="final"),
    )
    score = ev.evaluate(seven["text_guided_ie"])
    assert score.value == pytest.approx(0.6)
    assert [j["score"] for j in score.details["judgments"]] == [0.4, 0.8]
    assert score.spread["range"] == pytest.approx(0.4)
    assert score.spread["agreement"] == 0.0
    assert score.judge == "scripted:a,scripted:b"


def test_ensemble_sub_question_level_and_a_failed_judge(seven):
    a = ScriptedBackend(rule_judge(scores={"edit_success": 2, "over_editing": 9}), name="a")
    b = ScriptedBackend(rule_judge(scores={"edit_success": 6, "over_editing": 5}), name="b")
    broken = ScriptedBackend([BackendError("down")] * 5, name="c")
    ev = Evaluator(
        [a, b, broken],
        run_config=NO_CACHE,
        tools=(),
        ensemble=EnsembleConfig(combine="mean", level="sub_question"),
    )
    score = ev.evaluate(seven["text_guided_ie"])
    # mean per question first (4 and 7), then min -> 4
    assert score.status == "ok" and score.value == pytest.approx(0.4)
    assert score.sub_scores[0].judgments == [2, 6]
    assert score.details["missing_judgments"] == 1


def test_samples_per_model_use_distinct_seeds_and_temperature(seven):
    backend = ScriptedBackend(rule_judge())
    ev = Evaluator(
        backend,
        run_config=NO_CACHE,
        tools=(),
        ensemble=EnsembleConfig(samples_per_model=3, temperature=0.9),
    )
    score = ev.evaluate(seven["text_guided_ig"])
    assert score.ok
    settings = {(r.settings.temperature, r.settings.seed) for r in backend.requests}
    assert settings == {(0.9, 0), (0.9, 1), (0.9, 2)}


def test_many_samples_concurrently_in_input_order(tmp_path: Path):
    records = seven_task_samples(tmp_path)
    items = [sample_from_dict(r, base_dir=tmp_path) for r in records]
    in_flight = {"now": 0, "max": 0}
    judge = rule_judge()

    async def slow(request):
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        await asyncio.sleep(0.01)
        in_flight["now"] -= 1
        return judge(request)

    ev, _ = make_evaluator(slow)
    results = ev.evaluate_many(items, concurrency=4)
    assert [r.id for r in results] == [r["id"] for r in records]
    assert all(r.ok for r in results)
    assert in_flight["max"] > 1
    assert results[0].passthrough == {
        "model": "SD",
        "human": 0.5,
        "conditions": {"prompt": "a red square"},
    }


def test_evaluate_works_inside_a_running_event_loop(seven):
    ev, _ = make_evaluator(rule_judge(), tools=())

    async def notebook_cell():
        return ev.evaluate(seven["text_guided_ig"])

    assert asyncio.run(notebook_cell()).ok


def test_html_display_shows_images_and_sub_scores(seven):
    ev, _ = make_evaluator(rule_judge(), tools=())
    html = ev.evaluate(seven["subject_driven_ig"])._repr_html_()
    assert html.count("<img") == 2  # subject and output
    assert "judged subject_similarity" in html and "0.70" in html


def test_prompt_variants_replace_templates_and_form_an_ensemble(seven, tmp_path):
    # the paper layout's judge template of the question (exact text, {name} placeholders)
    strict = "STRICT VARIANT: judge the prompt harshly.\n{tool_text}\nText Prompt: {text}\n"
    variant = paper_prompt_dir(
        tmp_path / "strict", paper_judge_text_guided_ig_prompt_following=strict
    )
    plain = paper_prompt_dir(tmp_path / "plain")  # a paper-layout folder holds every template
    backend = ScriptedBackend(rule_judge())
    ev = Evaluator(
        backend,
        run_config=NO_CACHE,
        tools=(),
        ensemble=EnsembleConfig(prompt_dirs=(str(variant), str(plain))),
    )
    score = ev.evaluate(seven["text_guided_ig"])
    texts = [request_text(r) for r in backend.requests]
    assert sum("STRICT VARIANT" in t for t in texts) == 1
    assert len(score.details["judgments"]) == 2
    assert score.details["judgments"][0]["judge"].endswith(f"[{variant}]")


def test_optional_inputs_may_be_left_out_but_must_be_right_when_given(tmp_path: Path):
    records = {r["task"]: r for r in seven_task_samples(tmp_path)}
    side_by_side = dict(records["multi_concept_ic"], id="sbs")
    side_by_side.pop("concepts")
    side_by_side["images"] = {"subject": "subject.png", "output": "output.png"}
    no_mask = dict(records["mask_guided_ie"], id="nomask")
    no_mask["images"] = {k: v for k, v in no_mask["images"].items() if k != "mask"}
    three = dict(records["multi_concept_ic"], id="three", concepts=["a", "b", "c"])
    ev, _ = make_evaluator(rule_judge(), tools=())
    results = {
        r.id: r
        for r in ev.evaluate_many(
            [sample_from_dict(r, base_dir=tmp_path) for r in (side_by_side, no_mask, three)]
        )
    }
    assert results["sbs"].ok and len(results["sbs"].sub_scores) == 3
    assert results["nomask"].ok
    assert results["three"].status == "error" and "exactly two" in results["three"].error


def test_scores_and_records_to_a_dataframe(tmp_path: Path):
    from cigeval import read_records, to_frame
    from cigeval.results.jsonl import ResultsWriter

    items = [sample_from_dict(r, base_dir=tmp_path) for r in seven_task_samples(tmp_path)]
    ev, _ = make_evaluator(rule_judge(scores={"edit_success": 2}), tools=())
    scores = ev.evaluate_many(items)
    frame = to_frame(scores)
    assert list(frame["id"]) == [s.id for s in scores]
    row = frame.set_index("id").loc["tie"]
    assert row["score"] == pytest.approx(0.2) and row["sub.edit_success"] == 2
    assert row["sub.over_editing"] == 7 and row["calls"] == 2  # no tools: no planning call
    with ResultsWriter(tmp_path / "r.jsonl") as writer:
        for score in scores:
            writer.write(score)
    again = to_frame(read_records(tmp_path / "r.jsonl"))
    assert again.set_index("id").loc["t2i", "model"] == "SD"
    assert again["score"].tolist() == frame["score"].tolist()
