"""The CIGEval agent as a LangGraph graph.

Outer graph:   START -> plan -> (one ``answer`` branch per sub-question, in parallel) -> END
``answer`` is a subgraph running the thought/action/observation loop of one sub-question:
               START -> act (run the chosen tool) -> judge -> END, or back to act when the
               judge asks for another tool and rounds remain (``EvalConfig.max_rounds``).
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

from cigeval.agent.judging import Judgement, ToolRequest, build_judge_messages, parse_judge_reply
from cigeval.agent.plan import PlanItem, build_plan_messages, parse_plan
from cigeval.errors import CigevalError
from cigeval.messages import Message
from cigeval.sample_run import SampleRun
from cigeval.score import SubScore
from cigeval.tasks import TaskSpec
from cigeval.tools import Tool, ToolContext, ToolResult, get_tool
from cigeval.trace import ActionEvent, ErrorEvent, JudgementEvent, ObservationEvent, ThoughtEvent


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
    """State of one sub-question's loop."""

    index: int
    item: PlanItem
    round: int
    result: ToolResult | None
    sub_scores: Annotated[list[SubScore], operator.add]


async def plan_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """One tool-selection call per sample (skipped when no tool is offered)."""
    ctx = runtime.context
    questions = ctx.spec.sub_questions
    if not ctx.tools:
        return {"plan": {q.id: PlanItem(q.id, None) for q in questions}}
    messages = build_plan_messages(ctx.run, ctx.spec, ctx.tools)
    plan = await ctx.run.judge.ask(
        "plan", messages, lambda text: parse_plan(text, questions, ctx.tools)
    )
    for item in plan.values():
        if item.reasoning:
            ctx.run.trace.add(ThoughtEvent(text=item.reasoning, question_id=item.question_id))
    return {"plan": plan}


def fan_out(state: AgentState, runtime: Runtime[AgentContext]) -> list[Send]:
    """One ``answer`` branch per sub-question, each with its planned tool."""
    questions = runtime.context.spec.sub_questions
    return [
        Send("answer", {"index": i, "item": state["plan"][q.id], "round": 1, "result": None})
        for i, q in enumerate(questions)
    ]


async def act_node(state: QuestionState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the chosen tool (if any) and record the action and the observation."""
    ctx = runtime.context
    question = ctx.spec.sub_questions[state["index"]]
    item = state["item"]
    run = ctx.run
    run.trace.add(ActionEvent(tool=item.tool, query=item.query, question_id=question.id))
    if item.tool is None:
        return {"result": None}

    async def call_model(purpose: str, messages: list[Message]) -> str:
        return await run.judge.call(purpose, messages, question.id)

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
    )
    result = await get_tool(item.tool).run(tool_ctx)
    run.trace.add(
        ObservationEvent(
            question_id=question.id,
            tool=result.tool,
            text=result.text,
            highlighted=result.highlighted,
            boxes={role: [b.as_list() for b in boxes] for role, boxes in result.boxes.items()},
            data=result.data,
        )
    )
    return {"result": result}


async def judge_node(state: QuestionState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Score the sub-question from the images and the tool output, or ask for another round."""
    ctx = runtime.context
    question = ctx.spec.sub_questions[state["index"]]
    item, result = state["item"], state.get("result")
    can_request = bool(ctx.tools) and state["round"] < ctx.run.config.max_rounds
    messages = build_judge_messages(ctx.run, question, result, can_request, ctx.tool_names)
    reply = await ctx.run.judge.ask(
        "judge",
        messages,
        lambda text: parse_judge_reply(text, can_request, ctx.tool_names),
        question_id=question.id,
    )
    if isinstance(reply, ToolRequest):
        ctx.run.trace.add(ThoughtEvent(text=reply.thought, question_id=question.id))
        next_item = PlanItem(question.id, reply.tool, reply.query, reply.thought)
        return {"item": next_item, "round": state["round"] + 1}
    assert isinstance(reply, Judgement)
    ctx.run.trace.add(
        JudgementEvent(score=reply.score, reasoning=reply.reasoning, question_id=question.id)
    )
    sub = SubScore(
        question_id=question.id,
        question=question.question,
        score=reply.score,
        reasoning=reply.reasoning,
        tool=item.tool,
        tool_query=item.query,
        tool_output=result.text if result is not None else None,
    )
    if result is not None:
        sub._tool_images.update(result.images)
        sub.tool_image_ids = {
            role: ctx.run.encode(img).sha256 for role, img in result.images.items()
        }
    return {"sub_scores": [sub], "round": state["round"]}


def after_judge(state: QuestionState) -> str:
    """Loop back to ``act`` when the judge asked for another tool, else finish."""
    return END if state.get("sub_scores") else "act"


async def answer_guarded(state: QuestionState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the question subgraph; a failure becomes a SubScore with an error, not a crash."""
    question = runtime.context.spec.sub_questions[state["index"]]
    try:
        limit = 5 + 3 * runtime.context.run.config.max_rounds
        output = await _question_graph().ainvoke(
            state, context=runtime.context, config={"recursion_limit": limit}
        )
        return {"sub_scores": output["sub_scores"]}
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
def _question_graph() -> Any:
    graph = StateGraph(QuestionState, context_schema=AgentContext)
    graph.add_node("act", act_node)
    graph.add_node("judge", judge_node)
    graph.add_edge(START, "act")
    graph.add_edge("act", "judge")
    graph.add_conditional_edges("judge", after_judge, ["act", END])
    return graph.compile()


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
