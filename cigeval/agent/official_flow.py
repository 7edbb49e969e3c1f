"""One sample judged the way the official CIGEval code does it (``reply_parsing="official"``).

The official client makes two passes over a sample (HITsz-TMG/Agentic-CIGEval,
``evaluate.py``), each tried up to three times when anything in it fails:

- the *tool pass*: one planner request; its reply read as JSON (an unreadable one goes to a
  separate text-only repair request, :mod:`.official_reading`) and its keys mapped
  (``check``). Three failed attempts leave the sample without a plan: it is dropped;
- the *evaluate pass*: the sub-questions one after another, in the task's order: the plan's
  entry at the question's position (task 1, task 2: the two concept similarities share task
  1's), the tool it names if the evaluate pass runs it, the judge's request, its reply read
  (repair request included) and its score read from its digits. A failure anywhere (no entry
  at that position, no "score" key, a score without digits, and at the end a reply without
  "reasoning") ends the attempt, and the next attempt asks every request again from the first
  sub-question. Three failed attempts: the sample is dropped.

cigeval does the same requests in the same order, then, where the official code drops the
sample, records an error saying so (:class:`OfficialDrop`). The sub-scores are counted as the
official analysis counts them (``int()``, clipped into 0..10), each with a note where that
changed the value cigeval's strict reading would give. The repair request goes to the helper
model the official code uses for it and for scene graphs (``scene_graph_model`` when set,
else the judge). Transport failures and tool failures stay cigeval's (the backend retries a
request; a tool that fails is noted, ``tool_errors``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from cigeval._caller import in_callers_words
from cigeval.agent import official_reading as official
from cigeval.agent.graph import (
    FALLBACK,
    AgentContext,
    act_node,
    finished_sub_score,
    first_round,
)
from cigeval.agent.judging import build_judge_messages
from cigeval.agent.official_reading import OfficialReadError
from cigeval.agent.plan import PlanItem, build_plan_messages, shares_entries, task_ids
from cigeval.errors import CigevalError, ParseError
from cigeval.messages import Message, TextPart
from cigeval.prompts.exact import fill
from cigeval.prompts.paper_templates import REPAIR
from cigeval.registry import normalize_name
from cigeval.score import SubScore
from cigeval.session import quote_reply
from cigeval.tools.registry import OFFICIAL_TOOL_NAMES
from cigeval.trace import ErrorEvent, JudgementEvent, ThoughtEvent

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from cigeval.agent.graph import QuestionState
    from cigeval.session import JudgeSession
    from cigeval.tasks import SubQuestion

#: How many times the official code tries each pass of a sample before it drops it.
ATTEMPTS = 3
#: The trace stage of a failed attempt.
STAGE = "official_attempt"


class OfficialDrop(CigevalError):
    """The official code would drop this sample (its replies could not be read in three
    attempts), or its analysis could not count a score: the sample has no score."""


@dataclass(frozen=True)
class _Runtime:
    """What the agent's steps read of a LangGraph runtime: the context."""

    context: AgentContext


async def run_official(ctx: AgentContext) -> list[SubScore]:
    """The sample's sub-scores, judged as the official code judges it (the module docstring);
    OfficialDrop where it would drop the sample or its analysis could not count a score."""
    plan = await _tool_pass(ctx) if ctx.tools else None
    problem: Exception | None = None
    # The official code writes a sample's scores before it reads the reasonings: an attempt
    # that read every score keeps them, even when a missing reasoning fails it after that.
    kept: list[_Judged] | None = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            judged = await _ask_all(ctx, plan, attempt)
        except (OfficialReadError, ParseError) as exc:
            problem = exc
            _failed(ctx, "the evaluate pass", attempt, exc)
            continue
        kept = judged
        missing = [j.question.id for j in judged if not j.reading.has_reasoning]
        if not missing:
            break
        problem = OfficialReadError(f'the reply to {missing[0]} has no "reasoning" key')
        _failed(ctx, "the evaluate pass", attempt, problem)
    if kept is None:
        raise OfficialDrop(
            f"the official code drops this sample: its evaluate pass failed {ATTEMPTS} times "
            f"(the last time: {problem})"
        )
    return _counted(ctx, kept)


def _failed(ctx: AgentContext, what: str, attempt: int, problem: Exception) -> None:
    again = "tried again" if attempt < ATTEMPTS else "no attempt left"
    message = f"{what}, attempt {attempt} of {ATTEMPTS}: {problem} ({again})"
    ctx.run.trace.add(ErrorEvent(stage=STAGE, message=message))


async def _tool_pass(ctx: AgentContext) -> Any:
    """The plan as the official tool pass keeps it (a list of entries, or an object);
    OfficialDrop after three unreadable replies."""
    run = ctx.run
    messages = build_plan_messages(run, ctx.spec, ctx.tools)
    problem: Exception | None = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            reply = await run.judge.call("plan", messages, attempt=attempt, retries=0)
            data, repaired = await _json(ctx, reply, "plan", None, attempt)
            try:
                return official.check_plan(data)
            except OfficialReadError as exc:
                _unusable(ctx, "plan", str(exc), repaired or reply, None)
                raise
        except (OfficialReadError, ParseError) as exc:
            problem = exc
            _failed(ctx, "the tool pass", attempt, exc)
    raise OfficialDrop(
        f"the official code drops this sample: its planner's reply could not be read in "
        f"{ATTEMPTS} attempts (the last time: {problem})"
    )


async def _json(
    ctx: AgentContext, reply: str, purpose: str, question_id: str | None, attempt: int
) -> tuple[Any, str | None]:
    """The JSON of ``reply`` as the official code reads it, and the repair request's reply
    when it took one (a fresh text-only request to the helper model)."""
    try:
        return official.loads(reply), None
    except (ValueError, RecursionError):
        pass
    run = ctx.run
    _unusable(
        ctx,
        purpose,
        "not JSON the official code reads; sent to the repair request",
        reply,
        question_id,
    )
    prompt = fill(REPAIR, [("reply", official.repair_input(reply))], run.config.prompt_dir)
    helper: JudgeSession = run.scene_graph or run.judge
    request = Message("user", (TextPart(prompt),), listed=True)
    repaired = await helper.call("repair", [request], question_id, attempt=attempt, retries=0)
    try:
        return official.loads_repaired(repaired), repaired
    except (ValueError, RecursionError):
        problem = "the repair request's reply is not JSON either"
        _unusable(ctx, "repair", problem, repaired, question_id)
        raise OfficialReadError(
            "neither the reply nor the repair request's reply is JSON the official code reads"
        ) from None


def _unusable(
    ctx: AgentContext, purpose: str, problem: str, reply: str, question_id: str | None
) -> None:
    """An error event: a reply the official reading could not use, and its start."""
    message = f"{problem}; the reply: {quote_reply(reply)}"
    ctx.run.trace.add(ErrorEvent(stage=purpose, message=message, question_id=question_id))


def _positions(ctx: AgentContext) -> dict[str, int]:
    """Each question's plan entry, by position (0: task 1); shared entries as the planner was
    asked (the two concept similarities take task 1's)."""
    questions = ctx.spec.sub_questions
    shared = shares_entries(ctx.run.config)
    positions = {q.id: int(tid) - 1 for tid, q in task_ids(questions, shared=shared).items()}
    for question in questions:
        if shared and question.planned_with in positions:
            positions[question.id] = positions[question.planned_with]
    return positions


def _planned(ctx: AgentContext, plan: Any, question: SubQuestion, position: int) -> PlanItem:
    """The tool the official evaluate pass takes for ``question`` from the plan's entry at
    ``position`` (OfficialReadError where there is none)."""
    if plan is None:
        return PlanItem(question.id, None)
    entry = official.plan_entry(plan, position)
    value, reasoning = entry.get("tool"), entry.get("reasoning")
    tool, note = _tool_named(ctx, value)
    return PlanItem(
        question.id,
        tool,
        reasoning=reasoning if isinstance(reasoning, str) else "",
        note=note,
        chosen=value if isinstance(value, str) else None,
    )


def _tool_named(ctx: AgentContext, value: Any) -> tuple[str | None, str | None]:
    """The offered tool a plan entry's ``tool`` names as the official code reads it (its
    three names, exactly), or by a name the planner was shown for it (another offered tool's
    own name; every tool's under cigeval's layout), and why none where the entry named one."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None, None
    shown = _shown(ctx)
    listed = ", ".join(shown)
    if not isinstance(value, str):
        return None, f"judged without a tool: the plan's tool {value!r} is not a tool's name"
    offered = {normalize_name(t.name): t.name for t in ctx.tools}
    if value in OFFICIAL_TOOL_NAMES:
        meant = OFFICIAL_TOOL_NAMES[value]
        name = offered.get(normalize_name(meant))
        if name is not None:
            return name, None
        option = in_callers_words("--tools", "tools=")
        return None, (
            f"judged without a tool: the judge chose {value} ({meant}), which this run does "
            f"not offer (offered: {listed}; {option} sets the tools offered)"
        )
    own = {normalize_name(n): n for n in shown if n not in OFFICIAL_TOOL_NAMES}
    name = own.get(normalize_name(value))
    if name is not None:
        return offered.get(normalize_name(name), name), None
    return None, (
        f"judged without a tool: the judge chose {value!r}, which the official code does not "
        f"read as a tool (the planner was offered {listed})"
    )


def _shown(ctx: AgentContext) -> list[str]:
    """The tool names the planner was shown: the paper layout's list, else cigeval's names."""
    from cigeval.agent.paper_layout import official_plan, planner_tools

    if official_plan(ctx.run.config, ctx.spec):
        return [name for name, _ in planner_tools(ctx.tools)]
    return [tool.name for tool in ctx.tools]


@dataclass(frozen=True)
class _Judged:
    """One sub-question as an attempt of the evaluate pass left it."""

    question: SubQuestion
    state: dict[str, Any]
    reading: official.OfficialJudgement
    reply: str


async def _ask_all(ctx: AgentContext, plan: Any, attempt: int) -> list[_Judged]:
    """One attempt of the evaluate pass up to the sample's scores: every sub-question in
    order, its plan entry, tool, request and score read (see the module docstring)."""
    run = ctx.run
    runtime = cast("Runtime[AgentContext]", _Runtime(ctx))
    positions = _positions(ctx)
    judged: list[_Judged] = []
    for index, question in enumerate(ctx.spec.sub_questions):
        item = _planned(ctx, plan, question, positions[question.id])
        if attempt == 1 and item.reasoning:
            run.trace.add(ThoughtEvent(text=item.reasoning, question_id=question.id))
        if item.note:
            run.trace.add(ErrorEvent(stage=FALLBACK, message=item.note, question_id=question.id))
        state: dict[str, Any] = dict(first_round(index, item))
        state.update(await act_node(cast("QuestionState", state), runtime))
        messages = build_judge_messages(run, question, state.get("result"), False, [])
        reply = await run.judge.call("judge", messages, question.id, attempt=attempt, retries=0)
        data, repaired = await _json(ctx, reply, "judge", question.id, attempt)
        try:
            reading = official.read_judgement(
                data, repaired or reply, repaired=repaired is not None
            )
        except OfficialReadError as exc:
            _unusable(ctx, "judge", str(exc), repaired or reply, question.id)
            raise
        judged.append(_Judged(question, state, reading, reply))
    return judged


def _counted(ctx: AgentContext, judged: list[_Judged]) -> list[SubScore]:
    """The sub-scores as the official analysis counts the kept attempt's scores."""
    subs = []
    for item in judged:
        question, reading = item.question, item.reading
        try:
            score = reading.score()
        except OfficialReadError as exc:
            raise OfficialDrop(
                f"the official analysis cannot use this sample: {question.id}: {exc}"
            ) from None
        notes = [official.quirk_note(reading, score, item.reply)]
        if not reading.has_reasoning:
            notes.append(
                f'the reply has no "reasoning": the official code asked the sample {ATTEMPTS} '
                "times and kept the scores it read"
            )
        ctx.run.trace.add(
            JudgementEvent(score=score, reasoning=reading.reasoning, question_id=question.id)
        )
        state = cast("QuestionState", item.state)
        said = "; ".join(n for n in notes if n) or None
        subs.append(
            finished_sub_score(question, state, score, reading.reasoning, item.state["notes"], said)
        )
    return subs
