"""Tool selection: one planning call per sample, parsed and matched by task_id.

The planner may name a tool by any spelling or by the official code's names (Highlight,
MaskFocus, SceneGraph). An unusable plan is re-asked; once the re-asks are spent, what can be
read of the last reply is kept, and every sub-question whose entry is missing or names a tool
that is not offered is judged without a tool, with a note saying why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from cigeval.agent import paper_layout
from cigeval.config import EvalConfig
from cigeval.errors import ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.parsing import extract_json, parse_yes_no
from cigeval.prompts import render
from cigeval.registry import normalize_name
from cigeval.sample_run import SampleRun
from cigeval.tasks import SubQuestion, TaskSpec
from cigeval.tasks.labels import condition_label
from cigeval.tools import Tool
from cigeval.tools.registry import match_offered_tool, why_not_offered

#: Text fields the planner is shown, in this order (a task's own fields follow).
_PLAN_FIELDS = ("prompt", "instruction", "subject", "control_type")


@dataclass(frozen=True)
class PlanItem:
    """The planner's decision for one sub-question."""

    question_id: str
    tool: str | None
    query: str | None = None
    reasoning: str = ""
    #: Why the question has no tool although the plan meant one (unknown tool, no entry).
    note: str | None = None
    #: The tool as the planner named it (``MaskFocus`` for Difference), where it differs.
    chosen: str | None = None


def task_ids(questions: tuple[SubQuestion, ...], *, shared: bool = False) -> dict[str, SubQuestion]:
    """The task_id shown to the planner for each question: '1', '2', ...

    ``shared``: a question ``planned_with`` another gets no task_id of its own; it takes the
    other's entry (the official planner is asked about both concept similarities as one).
    """
    asked = [q for q in questions if not (shared and q.planned_with)]
    return {str(index): q for index, q in enumerate(asked, start=1)}


def _followers(questions: tuple[SubQuestion, ...], leader: SubQuestion) -> list[SubQuestion]:
    return [q for q in questions if q.planned_with == leader.id]


def shares_entries(config: EvalConfig) -> bool:
    """Whether questions ``planned_with`` another share its plan entry (the paper's prompt)."""
    return config.planner_prompt == "paper" or config.request_layout == "official"


def build_plan_messages(run: SampleRun, spec: TaskSpec, tools: list[Tool]) -> list[Message]:
    """The tool-selection request: task, conditions, questions, tools, and the images.

    ``planner_prompt="paper"``: the tools as the paper describes them, the note that tools do
    not help on processed images in every task (as the official prompt), and the images in
    the task's input order; ``extended``: cigeval's descriptions, the note only where the
    task has a processed condition, images in the questions' order. The planner is asked for
    a Grounding query only under ``grounding.queries="planner"``. ``request_layout="official"``
    (built-in tasks): the official request, text then unlabelled images
    (:mod:`cigeval.agent.paper_layout`).
    """
    sample = run.sample
    config = run.config
    if paper_layout.official_plan(config, spec):
        roles = _planner_roles(run, spec, in_task_order=True)
        return paper_layout.plan_messages(run, spec, roles, tools)
    paper = config.planner_prompt == "paper"
    conditions = []
    for field in (*_PLAN_FIELDS, *spec.declared_text_fields):
        value = getattr(sample, field, None)
        line = f"{condition_label(field)}: {value}" if value and field != "concepts" else None
        if line and line not in conditions:
            conditions.append(line)
    if sample.concepts:
        conditions.append("Concepts: " + ", ".join(sample.concepts))
    questions = []
    for tid, q in task_ids(spec.sub_questions, shared=paper).items():
        group = [q, *_followers(spec.sub_questions, q)] if paper else [q]
        # each member's own images first, then those every member shows (e.g. the output)
        common = set.intersection(*(set(member.image_roles) for member in group))
        ordered = [role for member in group for role in member.image_roles]
        roles = list(dict.fromkeys([r for r in ordered if r not in common] + ordered))
        wording = q.plan_question if len(group) > 1 and q.plan_question else q.question
        questions.append({"task_id": tid, "question": wording, "images": ", ".join(roles)})
    described = [{"name": t.name, "description": _description(t, paper)} for t in tools]
    text = render(
        "tool_selection.j2",
        prompt_dir=config.prompt_dir,
        task_title=spec.title,
        condition_lines=conditions,
        questions=questions,
        tools=described,
        tool_names=", ".join(f'"{t.name}"' for t in tools),
        processed_condition=spec.processed_condition or paper,
        ask_query=config.grounding.queries == "planner",
    )
    parts: list[TextPart | ImagePart] = [TextPart(text)]
    for role in _planner_roles(run, spec, in_task_order=paper):
        parts.append(TextPart(f"[{role}] {run.role_label(role)}:"))
        parts.append(ImagePart(run.encode(run.loaded[role]), role))
    return [Message("user", tuple(parts))]


def _description(tool: Tool, paper: bool) -> str:
    """What the planner reads about ``tool``: the paper's description where the tool has one
    and the paper's prompt is used, else its own."""
    if paper:
        return str(getattr(tool, "paper_description", None) or tool.description)
    return tool.description


def _planner_roles(run: SampleRun, spec: TaskSpec, *, in_task_order: bool) -> list[str]:
    """The images the planner sees: every image some question shows, once each.

    In the task's input order (the official code's order, e.g. source, subject, output), or
    in the order the questions show them. A side-by-side concept image is shown whole, as in
    the paper.
    """
    shown: list[str] = []
    for q in spec.sub_questions:
        for role in q.image_roles:
            if run.side_by_side and role in ("subject_1", "subject_2"):
                role = "subject"
            if role not in shown and role in run.images:
                shown.append(role)
    if not in_task_order:
        return shown
    order: list[str] = []
    for role in spec.image_roles:
        order += ["subject", "subject_1", "subject_2"] if role == "subjects" else [role]
    ranked = [r for r in order if r in shown]
    return ranked + [r for r in shown if r not in ranked]


def _match_task_id(raw: Any, ids: dict[str, SubQuestion]) -> str:
    text = str(raw).strip()
    if text in ids:
        return text
    for tid, question in ids.items():
        if text.lower() == question.id.lower():
            return tid
    numbers = re.findall(r"\d+", text)
    if len(numbers) == 1 and numbers[0] in ids:
        return numbers[0]
    raise ParseError(f"unknown task_id {raw!r}; expected one of {', '.join(ids)}")


def parse_plan(
    text: str,
    questions: tuple[SubQuestion, ...],
    tools: list[Tool],
    *,
    strict: bool = True,
    shared: bool = False,
) -> dict[str, PlanItem]:
    """Parse the planner's JSON list into one PlanItem per sub-question id.

    Entries are matched by ``task_id``, never by position. Strict (the default): every
    question needs exactly one entry, and an unknown task id or a tool that is not offered
    raises :class:`ParseError`, so the model is re-asked. Not strict (after the re-asks):
    whatever entries are usable are kept and every other question gets no tool and a note.
    ``shared``: questions ``planned_with`` another take its entry (see :func:`task_ids`).
    """
    ids = task_ids(questions, shared=shared)
    offered = [t.name for t in tools]
    plan: dict[str, PlanItem] = {}
    problems: dict[str, str] = {}

    def problem(message: str, tid: str | None = None) -> None:
        if strict:
            raise ParseError(message, reply=text)
        if tid is not None:
            problems.setdefault(ids[tid].id, message)

    try:
        data = extract_json(text, None)
    except ParseError as exc:
        if strict:
            raise
        data, unreadable = [], f"the plan could not be read ({exc})"
    else:
        unreadable = "the plan has no entry for it"
        if isinstance(data, dict):
            lists = [v for v in data.values() if isinstance(v, list)]
            data = lists[0] if len(lists) == 1 else [data]
        if not isinstance(data, list):
            problem("expected a JSON list with one object per question")
            data = []
    for entry in data:
        if not isinstance(entry, dict):
            problem(f"list entries must be JSON objects, got {entry!r}")
            continue
        # Keys in any spelling: "task_id", "Task ID", "taskId" are one key.
        lowered = {normalize_name(str(k)): v for k, v in entry.items()}
        if "taskid" not in lowered:
            problem(f"an entry has no task_id: {entry!r}")
            continue
        try:
            tid = _match_task_id(lowered["taskid"], ids)
        except ParseError as exc:
            problem(str(exc))
            continue
        question = ids[tid]
        if question.id in plan:
            problem(f"task_id {tid} appears more than once")
            continue
        tool_raw = lowered.get("tool")
        tool_name = str(tool_raw).strip() if tool_raw is not None else ""
        none = tool_name.lower() in ("", "none", "null")
        try:
            used = parse_yes_no(lowered["used"]) if "used" in lowered else not none
        except ParseError as exc:
            problem(f"task_id {tid}: {exc}", tid)
            continue
        tool: str | None = None
        if used and not none:
            tool = match_offered_tool(tool_name, offered)
            if tool is None:
                why = why_not_offered(tool_name, offered)
                problem(f"task_id {tid}: {why}; choose an offered tool or None", tid)
                continue
        query = lowered.get("query")
        plan[question.id] = PlanItem(
            question_id=question.id,
            tool=tool,
            query=str(query).strip() or None if query is not None else None,
            reasoning=str(lowered.get("reasoning", "")),
        )
    missing = [tid for tid, q in ids.items() if q.id not in plan]
    if missing and strict:
        raise ParseError(f"no entry for task_id {', '.join(missing)}", reply=text)
    for tid in missing:
        question = ids[tid]
        reason = problems.get(question.id, unreadable)
        plan[question.id] = PlanItem(
            question.id, None, note=f"judged without a tool: {reason} (after the re-asks)"
        )
    for question in questions:
        if shared and question.planned_with in plan:
            plan[question.id] = replace(plan[question.planned_with], question_id=question.id)
    return plan
