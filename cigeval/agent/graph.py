"""The CIGEval agent as a LangGraph graph.

Graph:         START -> plan -> (one ``answer`` branch per sub-question, in parallel) -> END
``answer`` runs the thought/action/observation loop of one sub-question:
               act (run the chosen tool) -> judge -> done, or back to act when the
               judge asks for another tool and rounds remain (``EvalConfig.max_rounds``).
The loop is a plain loop over the ``act`` and ``judge`` steps, not a LangGraph subgraph: a
subgraph run per sub-question cost more CPU than the steps themselves (benchmarks/README.md).
Each later round continues the sub-question's conversation (every earlier request, reply and
observation), and the sub-score lists every tool run in ``tool_steps``.
A plan entry that cannot be used (after the re-asks), a tool the method does not run in the
task (``EvalConfig.tool_use``, see :mod:`cigeval.agent.tool_use`) and a tool that fails on
the sample (``EvalConfig.tool_errors="fallback"``) never fail the sample: the sub-question is
judged without the tool, and the sub-score's ``note`` and an ``error`` trace event (stage
``fallback``) say why. A missing dependency or an unloadable model is a setup error and
always fails.
The per-sample objects (images, judge session, tools) travel in the graph's runtime context,
the graph state holds only the plan and the results.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from cigeval.agent.evidence import evidence_of
from cigeval.agent.judging import (
    Judgement,
    ToolRequest,
    build_judge_messages,
    build_round_message,
    parse_judge_reply,
)
from cigeval.agent.plan import PlanItem, build_plan_messages, parse_plan, shares_entries
from cigeval.agent.tool_use import why_not_run
from cigeval.errors import CigevalError, ConfigError, MissingDependency, ParseError, ToolError
from cigeval.messages import Message
from cigeval.sample_run import SampleRun
from cigeval.score import Evidence, SubScore, ToolStep
from cigeval.tasks import SubQuestion, TaskSpec
from cigeval.tools import Box, Tool, ToolContext, ToolResult, get_tool
from cigeval.trace import ActionEvent, ErrorEvent, JudgementEvent, ObservationEvent, ThoughtEvent

#: The trace stage of the events saying a sub-question was judged without its tool.
FALLBACK = "fallback"


@dataclass
class AgentContext:
    """Runtime context of one sample's graph run."""

    run: SampleRun
    spec: TaskSpec
    tools: list[Tool]

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model."""
        return [t.name for t in self.tools]


class AgentState(TypedDict, total=False):
    """State of the outer graph."""

    plan: dict[str, PlanItem]
    sub_scores: Annotated[list[SubScore], operator.add]


class QuestionState(TypedDict, total=False):
    """State of one sub-question's loop.

    ``item`` is this round's action; ``result`` what its tool returned (None: no tool ran);
    ``conversation`` every message of the earlier rounds, the judge's replies included;
    ``request`` the judge's reply that asked for this round; ``steps`` the tool runs so far;
    ``notes`` why the judging departed from the plan; ``last_result`` the latest tool output;
    ``failure`` why this round's tool gave no result; ``evidence`` the regions the tools of
    every round so far found.
    """

    index: int
    item: PlanItem
    round: int
    result: ToolResult | None
    conversation: list[Message]
    request: ToolRequest | None
    steps: list[ToolStep]
    notes: list[str]
    last_result: ToolResult | None
    failure: str | None
    evidence: list[Evidence]
    sub_scores: Annotated[list[SubScore], operator.add]


async def plan_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """One tool-selection call per sample (skipped when no tool is offered).

    After the re-asks, what can be read of the last reply is kept; the other sub-questions
    are judged without a tool (noted).
    """
    ctx = runtime.context
    questions = ctx.spec.sub_questions
    if not ctx.tools:
        return {"plan": {q.id: PlanItem(q.id, None) for q in questions}}
    messages = build_plan_messages(ctx.run, ctx.spec, ctx.tools)
    shared = shares_entries(ctx.run.config)
    try:
        plan = await ctx.run.judge.ask(
            "plan", messages, lambda text: parse_plan(text, questions, ctx.tools, shared=shared)
        )
    except ParseError as exc:
        plan = parse_plan(exc.reply or "", questions, ctx.tools, strict=False, shared=shared)
    for item in plan.values():
        if item.reasoning:
            ctx.run.trace.add(ThoughtEvent(text=item.reasoning, question_id=item.question_id))
        if item.note:
            ctx.run.trace.add(
                ErrorEvent(stage=FALLBACK, message=item.note, question_id=item.question_id)
            )
    return {"plan": plan}


def fan_out(state: AgentState, runtime: Runtime[AgentContext]) -> list[Send]:
    """One ``answer`` branch per sub-question, each with its planned tool."""
    questions = runtime.context.spec.sub_questions
    sends = []
    for index, question in enumerate(questions):
        sends.append(Send("answer", first_round(index, state["plan"][question.id])))
    return sends


def first_round(index: int, item: PlanItem) -> QuestionState:
    """The state a sub-question (the ``index``-th of its task) starts from, with its plan
    ``item``: round 1, nothing asked or run yet, the plan's note (if any) noted."""
    return {
        "index": index,
        "item": item,
        "round": 1,
        "result": None,
        "conversation": [],
        "request": None,
        "steps": [],
        "notes": [item.note] if item.note else [],
        "evidence": [],
    }


async def act_node(state: QuestionState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the chosen tool (if any) and record the action, the observation and the step."""
    ctx = runtime.context
    question = ctx.spec.sub_questions[state["index"]]
    item, round_number = state["item"], state["round"]
    run = ctx.run
    run.trace.add(
        ActionEvent(tool=item.tool, query=item.query, question_id=question.id, round=round_number)
    )
    if item.tool is None:
        return {"result": None, "failure": None}
    step = ToolStep(round=round_number, tool=item.tool, query=item.query, thought=item.reasoning)
    refused = why_not_run(item.tool, ctx.spec.id, run.config, item.chosen)
    if refused is not None:
        note = f"judged without a tool: {refused}"
        run.trace.add(ErrorEvent(stage=FALLBACK, message=note, question_id=question.id))
        return {
            "result": None,
            "failure": refused,
            "steps": [*state["steps"], step.model_copy(update={"error": f"not run: {refused}"})],
            "notes": [*state["notes"], note],
        }

    # A tool's model calls (scene graphs) are this sample's own: never another's reply.
    scope = run.sample.id

    async def call_model(purpose: str, messages: list[Message]) -> str:
        return await run.judge.call(purpose, messages, question.id, round=round_number, scope=scope)

    async def call_scene_graph_model(purpose: str, messages: list[Message]) -> str:
        assert run.scene_graph is not None
        return await run.scene_graph.call(
            purpose, messages, question.id, round=round_number, scope=scope
        )

    tool_ctx = ToolContext(
        sample=run.sample,
        question=question,
        images=run.images,
        config=run.config,
        query=item.query,
        call_model=call_model,
        encode=run.encode,
        memo=run.memo,
        cache=run.tool_cache,
        call_scene_graph_model=call_scene_graph_model if run.scene_graph is not None else None,
        found=_found_before(state.get("evidence", [])),
    )
    try:
        result = await get_tool(item.tool).run(tool_ctx)
    except (MissingDependency, ConfigError):
        raise  # a setup problem: the same for every sample, never hidden
    except Exception as exc:
        failure = f"the {item.tool} tool failed: {type(exc).__name__}: {exc}"
        if run.config.tool_errors == "fail":
            if isinstance(exc, CigevalError):
                raise
            raise ToolError(failure) from exc
        note = f"{failure}; judged without it"
        run.trace.add(ErrorEvent(stage=FALLBACK, message=note, question_id=question.id))
        return {
            "result": None,
            "failure": failure,
            "steps": [*state["steps"], step.model_copy(update={"error": failure})],
            "notes": [*state["notes"], note],
        }
    run.trace.add(
        ObservationEvent(
            question_id=question.id,
            round=round_number,
            tool=result.tool,
            text=result.text,
            highlighted=result.highlighted,
            boxes={role: [b.as_list() for b in boxes] for role, boxes in result.boxes.items()},
            data=result.data,
        )
    )
    # The query the tool used (Grounding may not use the planner's, see grounding.queries).
    used_query = _str_or_none(result.data.get("query")) or item.query
    step = step.model_copy(
        update={
            "tool": result.tool,
            "query": used_query,
            "output": result.text,
            "image_ids": {
                **{role: run.encode(img).sha256 for role, img in result.images.items()},
                **{view.key: run.encode(view.image).sha256 for view in result.views},
            },
        }
    )
    sizes = {role: image.size for role, image in run.loaded.items()}
    return {
        "result": result,
        "failure": None,
        "steps": [*state["steps"], step],
        "last_result": result,
        "evidence": [*state.get("evidence", []), *evidence_of(result, round_number, sizes)],
    }


def _found_before(evidence: list[Evidence]) -> dict[str, list[Box]]:
    """The regions earlier rounds found, by image role, as the tools' boxes."""
    found: dict[str, list[Box]] = {}
    for entry in evidence:
        x0, y0, x1, y1 = entry.box
        box = Box(x0, y0, x1, y1, label=entry.label, score=entry.confidence, found_by=entry.tool)
        found.setdefault(entry.role, []).append(box)
    return found


def _str_or_none(value: Any) -> str | None:
    return str(value) if value else None


async def judge_node(state: QuestionState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Score the sub-question from the images and the tool output, or ask for another round."""
    ctx = runtime.context
    run = ctx.run
    question = ctx.spec.sub_questions[state["index"]]
    result, round_number = state.get("result"), state["round"]
    names = ctx.tool_names
    can_request = bool(ctx.tools) and round_number < run.config.max_rounds
    if round_number == 1:
        messages = build_judge_messages(run, question, result, can_request, names)
    else:
        request = state.get("request")
        assert request is not None
        failure = state.get("failure")
        turn = build_round_message(
            run, question, request, result, round_number, can_request, names, failure
        )
        messages = [*state["conversation"], turn]
    accepted: list[str] = []

    def parse(text: str) -> Judgement | ToolRequest:
        parsed = parse_judge_reply(text, can_request, names)
        accepted.append(text)
        return parsed

    try:
        reply = await run.judge.ask(
            "judge", messages, parse, question_id=question.id, round=round_number
        )
    except ParseError as exc:
        if not can_request or exc.reply is None:
            raise
        # Only a request for a tool that is not offered is salvaged; anything else fails.
        try:
            reply = parse_judge_reply(exc.reply, can_request, names, strict=False)
        except ParseError:
            raise exc from None
        accepted.append(exc.reply)
    notes = list(state["notes"])
    if isinstance(reply, ToolRequest):
        run.trace.add(
            ThoughtEvent(text=reply.thought, question_id=question.id, round=round_number + 1)
        )
        if reply.note:
            notes.append(f"round {round_number + 1}: {reply.note}; no tool ran")
            run.trace.add(ErrorEvent(stage=FALLBACK, message=notes[-1], question_id=question.id))
        return {
            "item": PlanItem(question.id, reply.tool, reply.query, reply.thought),
            "round": round_number + 1,
            "conversation": [*messages, Message.text("assistant", accepted[-1])],
            "request": reply,
            "notes": notes,
        }
    assert isinstance(reply, Judgement)
    run.trace.add(
        JudgementEvent(score=reply.score, reasoning=reply.reasoning, question_id=question.id)
    )
    sub = finished_sub_score(question, state, reply.score, reply.reasoning, notes)
    return {"sub_scores": [sub], "round": round_number}


def finished_sub_score(
    question: SubQuestion,
    state: QuestionState,
    score: float,
    reasoning: str,
    notes: list[str],
    reading_note: str | None = None,
) -> SubScore:
    """The sub-score of a judged question: its score and reasoning, the tools its loop ran
    (``state``), the notes on why it went without one (which mark it degraded), and how the
    official reply reading changed the score (``reading_note``, which does not)."""
    steps = state["steps"]
    last = next((s for s in reversed(steps) if s.error is None), None)
    said = [*notes, reading_note] if reading_note else notes
    sub = SubScore(
        question_id=question.id,
        question=question.question,
        score=score,
        reasoning=reasoning,
        tool=last.tool if last is not None else None,
        tool_query=last.query if last is not None else None,
        tool_output=last.output if last is not None else None,
        tool_steps=steps,
        note="; ".join(said) or None,
        # every note says the sub-question went without a tool the plan or the judge chose
        degraded=bool(notes),
        evidence=list(state.get("evidence", [])),
    )
    shown = state.get("last_result")
    if last is not None and shown is not None:
        sub.tool_image_ids = dict(last.image_ids)
        sub._tool_images.update(shown.images)
        sub._tool_images.update({view.key: view.image for view in shown.views})
    return sub


async def answer_question(state: QuestionState, runtime: Runtime[AgentContext]) -> list[SubScore]:
    """The thought/action/observation loop of one sub-question: ``act`` then ``judge``, again
    while the judge asks for another tool (at most ``max_rounds`` rounds: the last round's
    judge may not ask). Each step's update replaces the keys it names, as a graph's would."""
    current: dict[str, Any] = dict(state)
    for _ in range(runtime.context.run.config.max_rounds):
        current.update(await act_node(current, runtime))  # type: ignore[arg-type]
        update = await judge_node(current, runtime)  # type: ignore[arg-type]
        if update.get("sub_scores"):
            return list(update["sub_scores"])
        current.update(update)
    raise RuntimeError("the judge asked for a tool in the last round")  # judge_node forbids it


async def answer_guarded(state: QuestionState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the question's loop; a failure becomes a SubScore with an error, not a crash."""
    question = runtime.context.spec.sub_questions[state["index"]]
    try:
        return {"sub_scores": await answer_question(state, runtime)}
    except CigevalError as exc:
        runtime.context.run.trace.add(
            ErrorEvent(stage="sub_question", message=str(exc), question_id=question.id)
        )
        return {
            "sub_scores": [
                SubScore(
                    question_id=question.id,
                    question=question.question,
                    score=None,
                    tool=state["item"].tool,
                    error=f"{type(exc).__name__}: {exc}",
                )
            ]
        }


@lru_cache(maxsize=1)
def agent_graph() -> Any:
    """The compiled outer graph (built once, reused for every sample)."""
    graph = StateGraph(AgentState, context_schema=AgentContext)
    graph.add_node("plan", plan_node)
    graph.add_node("answer", answer_guarded)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", fan_out, ["answer"])
    graph.add_edge("answer", END)
    return graph.compile()


async def run_agent(ctx: AgentContext) -> list[SubScore]:
    """Run the agent on one sample; sub-scores come back in the task's question order."""
    rounds = ctx.run.config.max_rounds
    limit = 10 + 3 * rounds * len(ctx.spec.sub_questions)
    state = await agent_graph().ainvoke({}, context=ctx, config={"recursion_limit": limit})
    order = {q.id: i for i, q in enumerate(ctx.spec.sub_questions)}
    return sorted(state["sub_scores"], key=lambda s: order[s.question_id])
