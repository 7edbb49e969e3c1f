"""Judging one sub-question: build the scoring request and parse the reply."""

from __future__ import annotations

from dataclasses import dataclass

from cigeval.errors import ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.parsing import extract_json, parse_judgement
from cigeval.prompts import render
from cigeval.registry import normalize_name
from cigeval.sample_run import SampleRun
from cigeval.tasks import SubQuestion
from cigeval.tools import ToolResult


@dataclass(frozen=True)
class Judgement:
    """A final 0-10 score with its reasoning."""

    score: float
    reasoning: str


@dataclass(frozen=True)
class ToolRequest:
    """The judge asked for another thought/action/observation round."""

    thought: str
    tool: str | None
    query: str | None


def build_judge_messages(
    run: SampleRun,
    question: SubQuestion,
    result: ToolResult | None,
    can_request_tool: bool,
    tool_names: list[str],
) -> list[Message]:
    """System context plus a user message: rules, labelled images, tool content, condition."""
    prompt_dir = run.config.prompt_dir
    parts: list[TextPart | ImagePart] = [
        TextPart("RULES:\n" + question.rules_text(run.sample, prompt_dir)),
    ]
    replaced = result.images if result is not None else {}
    for index, role in enumerate(question.image_roles, start=1):
        if role not in run.images:
            continue
        image = replaced.get(role, run.images[role])
        parts.append(TextPart(f"Image {index}: {run.task.role_label(role)}"))
        parts.append(ImagePart(run.encode(image), role))
    condition = question.condition_text(run.sample)
    tail = render(
        "judge_tail.j2",
        prompt_dir=prompt_dir,
        tool=result.tool if result is not None else None,
        highlighted=bool(result is not None and result.highlighted),
        observation=result.text if result is not None and result.text else "",
        condition_label=question.condition_label() if condition else "",
        condition=condition or "",
        can_request_tool=can_request_tool,
        tool_names=", ".join(f'"{n}"' for n in tool_names),
    )
    parts.append(TextPart(tail))
    system = render("context.j2", prompt_dir=prompt_dir)
    return [Message.text("system", system), Message("user", tuple(parts))]


def parse_judge_reply(
    text: str, can_request_tool: bool, tool_names: list[str]
) -> Judgement | ToolRequest:
    """A :class:`Judgement`, or a :class:`ToolRequest` when the judge may and does ask for one."""
    if can_request_tool:
        try:
            data = extract_json(text, dict)
        except ParseError:
            data = None
        if isinstance(data, dict) and "score" not in data and "tool" in data:
            known = {normalize_name(n): n for n in tool_names}
            raw = str(data.get("tool") or "None")
            key = normalize_name(raw)
            if key not in known and key != "none":
                raise ParseError(
                    f"unknown tool {raw!r}; choose one of {', '.join(tool_names)}", reply=text
                )
            query = str(data.get("query") or "").strip() or None
            return ToolRequest(str(data.get("thought", "")), known.get(key), query)
    score, reasoning = parse_judgement(text)
    return Judgement(score, reasoning)
