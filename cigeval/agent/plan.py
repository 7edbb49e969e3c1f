"""Tool selection: one planning call per sample, parsed and matched by task_id."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cigeval.errors import ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.parsing import extract_json, parse_yes_no
from cigeval.prompts import render
from cigeval.registry import normalize_name
from cigeval.sample_run import SampleRun
from cigeval.tasks import SubQuestion, TaskSpec
from cigeval.tasks.labels import condition_label
from cigeval.tools import Tool

#: Text fields the planner is shown, in this order (a task's own fields follow).
_PLAN_FIELDS = ("prompt", "instruction", "subject", "control_type")


@dataclass(frozen=True)
class PlanItem:
    """The planner's decision for one sub-question."""

    question_id: str
    tool: str | None
    query: str | None = None
    reasoning: str = ""


def task_ids(questions: tuple[SubQuestion, ...]) -> dict[str, SubQuestion]:
    """The task_id shown to the planner for each question: '1', '2', ..."""
    return {str(index): q for index, q in enumerate(questions, start=1)}


def build_plan_messages(run: SampleRun, spec: TaskSpec, tools: list[Tool]) -> list[Message]:
    """The tool-selection request: task, conditions, questions, tools, and the images."""
    sample = run.sample
    conditions = []
    for field in (*_PLAN_FIELDS, *spec.declared_text_fields):
        value = getattr(sample, field, None)
        line = f"{condition_label(field)}: {value}" if value and field != "concepts" else None
        if line and line not in conditions:
            conditions.append(line)
    if sample.concepts:
        conditions.append("Concepts: " + ", ".join(sample.concepts))
    questions = [
        {"task_id": tid, "question": q.question, "images": ", ".join(q.image_roles)}
        for tid, q in task_ids(spec.sub_questions).items()
    ]
    text = render(
        "tool_selection.j2",
        prompt_dir=run.config.prompt_dir,
        task_title=spec.title,
        condition_lines=conditions,
        questions=questions,
        tools=tools,
        tool_names=", ".join(f'"{t.name}"' for t in tools),
        processed_condition=spec.processed_condition,
    )
    roles: list[str] = []
    for q in spec.sub_questions:
        roles.extend(r for r in q.image_roles if r not in roles and r in run.images)
    parts: list[TextPart | ImagePart] = [TextPart(text)]
    for role in roles:
        parts.append(TextPart(f"[{role}] {spec.role_label(role)}:"))
        parts.append(ImagePart(run.encode(run.images[role]), role))
    return [Message("user", tuple(parts))]


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
    text: str, questions: tuple[SubQuestion, ...], tools: list[Tool]
) -> dict[str, PlanItem]:
    """Parse the planner's JSON list into one PlanItem per sub-question id.

    Entries are matched by ``task_id``, never by position. Every question needs exactly one
    entry; unknown tools and task ids are errors (the model is re-asked).
    """
    data = extract_json(text, None)
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else [data]
    if not isinstance(data, list):
        raise ParseError("expected a JSON list with one object per question", reply=text)
    ids = task_ids(questions)
    by_name = {normalize_name(t.name): t.name for t in tools}
    plan: dict[str, PlanItem] = {}
    for entry in data:
        if not isinstance(entry, dict):
            raise ParseError(f"list entries must be JSON objects, got {entry!r}", reply=text)
        lowered = {str(k).strip().lower(): v for k, v in entry.items()}
        if "task_id" not in lowered:
            raise ParseError(f"an entry has no task_id: {entry!r}", reply=text)
        tid = _match_task_id(lowered["task_id"], ids)
        question = ids[tid]
        if question.id in plan:
            raise ParseError(f"task_id {tid} appears more than once", reply=text)
        tool_raw = lowered.get("tool")
        tool_key = normalize_name(str(tool_raw)) if tool_raw is not None else "none"
        used = parse_yes_no(lowered["used"]) if "used" in lowered else tool_key not in ("none", "")
        tool: str | None = None
        if used and tool_key not in ("none", "", "null"):
            if tool_key not in by_name:
                raise ParseError(
                    f"unknown tool {tool_raw!r} for task_id {tid}; choose one of "
                    f"{', '.join(by_name.values())} or None",
                    reply=text,
                )
            tool = by_name[tool_key]
        query = lowered.get("query")
        plan[question.id] = PlanItem(
            question_id=question.id,
            tool=tool,
            query=str(query).strip() or None if query is not None else None,
            reasoning=str(lowered.get("reasoning", "")),
        )
    missing = [tid for tid, q in ids.items() if q.id not in plan]
    if missing:
        raise ParseError(f"no entry for task_id {', '.join(missing)}", reply=text)
    return plan
