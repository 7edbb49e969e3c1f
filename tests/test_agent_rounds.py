"""Extra thought/action/observation rounds: each round carries the whole conversation so far,
the sub-score lists every tool run, and the trajectory exports as one conversation."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.messages import ImagePart, ModelRequest
from cigeval.meta import export_trajectories
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text
from cigeval.testing.samples_factory import seven_task_samples
from cigeval.tools import ToolContext, ToolResult
from cigeval.tools.registry import TOOLS

NO_CACHE = RunConfig(use_cache=False)
PLAN = '[{"task_id": "1", "reasoning": "check the apple", "used": "yes", "tool": "Probe"}]'


class Probe:
    """A tool whose observation names its run and query, and which darkens the output."""

    name, description = "Probe", "looks closely"

    def __init__(self) -> None:
        self.queries: list[str | None] = []

    async def run(self, ctx: ToolContext) -> ToolResult:
        self.queries.append(ctx.query)
        run = len(self.queries)
        output = ctx.images["output"]
        marked = Image.new("RGB", output.size, (run * 40, 0, 0))
        return ToolResult(
            tool=self.name,
            text=f"observation {run} for {ctx.query or 'nothing'}",
            images={"output": marked},
            highlighted=True,
        )


@pytest.fixture
def sample(tmp_path: Path) -> Any:
    record = next(r for r in seven_task_samples(tmp_path) if r["task"] == "text_guided_ig")
    return sample_from_dict(record, base_dir=tmp_path)


def _three_rounds() -> tuple[list[str], Any]:
    """A plan choosing Probe, then a judge asking for Probe twice more before scoring."""
    judge = iter(
        [
            '{"thought": "thought one: the colour is unclear", "tool": "Probe", "query": "apple"}',
            '{"thought": "thought two: and the table?", "tool": "probe", "query": "table"}',
            '{"score": 4, "reasoning": "the apple is green"}',
        ]
    )

    def reply(request: ModelRequest) -> str:
        return PLAN if "### Task" in request_text(request) else next(judge)

    return [], reply


def _judge_requests(backend: ScriptedBackend) -> list[ModelRequest]:
    return [r for r in backend.requests if "RULES:" in request_text(r)]


def test_each_round_carries_the_earlier_thoughts_actions_and_observations(
    sample, tmp_path: Path
) -> None:
    probe = Probe()
    _, reply = _three_rounds()
    backend = ScriptedBackend(reply)
    stored = RunConfig(use_cache=False, image_dir=tmp_path / "images")
    with TOOLS.scoped():
        TOOLS.register("Probe", probe)  # type: ignore[arg-type]
        ev = Evaluator(
            backend, run_config=stored, tools=("Probe",), max_rounds=3, request_layout="cigeval"
        )
        score = ev.evaluate(sample)
    assert score.status == "ok" and score.value == pytest.approx(0.4)
    first, second, third = _judge_requests(backend)
    # round 2 = round 1's request + the judge's reply + the new observation
    assert second.messages[: len(first.messages)] == first.messages
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
    assert "thought one" in second.messages[2].text_content()
    assert "observation 1 for nothing" in second.messages[1].text_content()  # planned, round 1
    turn = second.messages[3].text_content()
    assert "Round 2 of 3" in turn and "observation 2 for apple" in turn and '"apple"' in turn
    assert "another tool would settle it" in turn  # a round is left
    # the new observation brings the tool's image of the output
    images = [p for p in second.messages[3].parts if isinstance(p, ImagePart)]
    assert [p.label for p in images] == ["output"]
    # round 3 carries everything before it
    assert third.messages[: len(second.messages)] == second.messages
    assert "thought two" in third.messages[4].text_content()
    last = third.messages[5].text_content()
    assert "Round 3 of 3" in last and "observation 3 for table" in last
    assert "another tool would settle it" not in last
    assert probe.queries == [None, "apple", "table"]
    # the sub-score records every tool run, in order; tool/tool_output are the last one
    sub = score.sub_scores[0]
    assert [(s.round, s.tool, s.query, s.output) for s in sub.tool_steps] == [
        (1, "Probe", None, "observation 1 for nothing"),
        (2, "Probe", "apple", "observation 2 for apple"),
        (3, "Probe", "table", "observation 3 for table"),
    ]
    assert [s.thought for s in sub.tool_steps] == [
        "check the apple",
        "thought one: the colour is unclear",
        "thought two: and the table?",
    ]
    assert all(set(s.image_ids) == {"output"} for s in sub.tool_steps)
    assert len({s.image_ids["output"] for s in sub.tool_steps}) == 3
    assert (sub.tool, sub.tool_query, sub.tool_output) == (
        "Probe",
        "table",
        "observation 3 for table",
    )
    assert sub.tool_image_ids == sub.tool_steps[-1].image_ids and sub.note is None
    # the trace: actions, observations and judge calls by round
    events = [(e.type, getattr(e, "round", None)) for e in score.trace.events]
    assert [r for t, r in events if t == "action"] == [1, 2, 3]
    assert [r for t, r in events if t == "observation"] == [1, 2, 3]
    judge_calls = [e for e in score.trace.model_calls() if e.purpose == "judge"]
    assert [c.round for c in judge_calls] == [1, 2, 3]
    # every image of every step can be read back from the record
    record = score.to_record()
    for step in record["sub_scores"][0]["tool_steps"]:
        assert Path(record["image_files"][step["image_ids"]["output"]]).is_file()


def test_a_multi_round_sub_question_exports_as_one_conversation(sample) -> None:
    _, reply = _three_rounds()
    backend = ScriptedBackend(reply)
    with TOOLS.scoped():
        TOOLS.register("Probe", Probe())  # type: ignore[arg-type]
        ev = Evaluator(
            backend, run_config=NO_CACHE, tools=("Probe",), max_rounds=3, request_layout="cigeval"
        )
        record = ev.evaluate(sample).to_record()
    calls = [json.loads(line) for line in _export(record).splitlines()]
    judge = [c for c in calls if c["purpose"] == "judge"]
    assert len(judge) == 1 and judge[0]["calls"] == 3  # the three rounds: one conversation
    roles = [m["role"] for m in judge[0]["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    final = '{"score": 4, "reasoning": "the apple is green"}'
    assert judge[0]["messages"][-1]["content"] == [{"type": "text", "text": final}]
    (conversation,) = [json.loads(line) for line in _export(record, per="sample").splitlines()]
    texts = [_text(m) for m in conversation["messages"]]
    assert [m["role"] for m in conversation["messages"]] == [
        "user",  # the plan (it has no system prompt), then its reply
        "assistant",
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert sum("thought one" in t for t in texts) == 1  # each turn once
    placeholders = sum(t.count("<image>") for t in texts)
    assert placeholders == len(conversation["images"])


def test_a_reasked_round_continues_from_the_reply_that_worked(sample) -> None:
    judge = iter(
        [
            "let me think",  # unusable: re-asked
            '{"thought": "look closer", "tool": "Probe", "query": "apple"}',
            '{"score": 5, "reasoning": "fine"}',
        ]
    )

    def reply(request: ModelRequest) -> str:
        return PLAN if "### Task" in request_text(request) else next(judge)

    backend = ScriptedBackend(reply)
    with TOOLS.scoped():
        TOOLS.register("Probe", Probe())  # type: ignore[arg-type]
        ev = Evaluator(
            backend, run_config=NO_CACHE, tools=("Probe",), max_rounds=2, request_layout="cigeval"
        )
        score = ev.evaluate(sample)
    assert score.ok
    first, reask, second = _judge_requests(backend)
    assert len(reask.messages) == len(first.messages) + 2
    # the next round builds on the original request and the usable reply, not the failed one
    assert second.messages[: len(first.messages)] == first.messages
    assert "look closer" in second.messages[len(first.messages)].text_content()
    assert all("let me think" not in m.text_content() for m in second.messages)
    (conversation,) = [
        json.loads(line) for line in _export(score.to_record(), per="sample").splitlines()
    ]
    assert "let me think" not in json.dumps(conversation)
    roles = [m["role"] for m in conversation["messages"]]
    assert roles == ["user", "assistant", "system", "user", "assistant", "user", "assistant"]


def _export(record: dict[str, Any], **options: Any) -> str:
    """Export with images referenced by hash (the tool images of these runs are not stored)."""
    out = io.StringIO()
    export_trajectories([record], out, image_template="sha256:{sha256}", **options)
    return out.getvalue()


def _text(message: dict[str, Any]) -> str:
    """A message's content parts as text, an ``<image>`` for each image."""
    return "".join(p["text"] if p["type"] == "text" else "<image>" for p in message["content"])
