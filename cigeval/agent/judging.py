"""Judging one sub-question: the scoring request, its later rounds, and parsing the reply.

Under the official layout (the paper's method) the first request is the official code's
(:mod:`cigeval.agent.paper_layout`). Under cigeval's layout, the first request is
[system context, user: rules, labelled images (a tool's highlighted
versions where it made them), the tool's output, the conditions, the reply format]. When the
judge asks for another tool instead of scoring, the conversation grows: its reply becomes an
assistant turn and the new observation (text and the tool's images) a user turn, so each round
sees every earlier thought, action and observation. Tool choice stays JSON in the reply text,
so any vision-language model can drive it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cigeval.agent import paper_layout
from cigeval.errors import ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.parsing import extract_json, parse_judgement
from cigeval.prompts import render
from cigeval.sample_run import SampleRun
from cigeval.tasks import SubQuestion
from cigeval.tools import ToolResult
from cigeval.tools.registry import match_offered_tool, why_not_offered


@dataclass(frozen=True)
class Judgement:
    """A final 0-10 score with its reasoning."""

    score: float
    reasoning: str


@dataclass(frozen=True)
class ToolRequest:
    """The judge asked for another thought/action/observation round.

    ``note`` says why no tool will run although one was named (after the re-asks, a tool
    that is not offered).
    """

    thought: str
    tool: str | None
    query: str | None
    note: str | None = None


def _reply_format(run: SampleRun, can_request_tool: bool, tool_names: list[str]) -> str:
    return render(
        "judge_reply.j2",
        prompt_dir=run.config.prompt_dir,
        can_request_tool=can_request_tool,
        tool_names=", ".join(f'"{n}"' for n in tool_names),
    )


def _say_dimmed(run: SampleRun, result: ToolResult | None) -> bool:
    """Whether the judge's tool header says what was highlighted and dimmed: only under
    ``tool_text="detailed"``; under ``focus`` the tool's own one-line text says it all."""
    highlighted = result is not None and result.highlighted
    return highlighted and run.config.tool_text == "detailed"


def build_judge_messages(
    run: SampleRun,
    question: SubQuestion,
    result: ToolResult | None,
    can_request_tool: bool,
    tool_names: list[str],
) -> list[Message]:
    """System context plus a user message: rules, labelled images, tool content, conditions.

    Under ``request_layout="official"`` (built-in tasks): the official layout instead, one
    user message, the text (tool text inside the rules) then the images unlabelled
    (:mod:`cigeval.agent.paper_layout`).
    """
    if paper_layout.official_judge(run.config, run.task, question):
        return paper_layout.judge_messages(run, question, result, can_request_tool, tool_names)
    prompt_dir = run.config.prompt_dir
    rules = question.rules_text(run.sample, prompt_dir, run.config.scoring_rules)
    parts: list[TextPart | ImagePart] = [TextPart("RULES:\n" + rules)]
    replaced = result.images if result is not None else {}
    for index, role in enumerate(question.image_roles, start=1):
        if role not in run.images:
            continue
        image = replaced.get(role, run.loaded[role])
        parts.append(TextPart(f"Image {index}: {run.role_label(role)}"))
        parts.append(ImagePart(run.encode(image), role))
    if result is not None:
        parts += view_parts(run, result, len(question.image_roles) + 1)
    conditions = question.condition_lines(run.sample)
    first_label, first_text = conditions[0] if conditions else ("", "")
    tail = render(
        "judge_tail.j2",
        prompt_dir=prompt_dir,
        tool=result.tool if result is not None else None,
        highlighted=_say_dimmed(run, result),
        observation=result.text if result is not None and result.text else "",
        conditions=conditions,
        # The first condition alone, for --prompt-dir templates written before several were shown.
        condition_label=first_label,
        condition=first_text,
        can_request_tool=can_request_tool,
        tool_names=", ".join(f'"{n}"' for n in tool_names),
    )
    parts.append(TextPart(tail))
    system = render("context.j2", prompt_dir=prompt_dir)
    return [Message.text("system", system), Message("user", tuple(parts))]


def build_round_message(
    run: SampleRun,
    question: SubQuestion,
    request: ToolRequest,
    result: ToolResult | None,
    round_number: int,
    can_request_tool: bool,
    tool_names: list[str],
    no_tool_reason: str | None = None,
) -> Message:
    """The user turn of round ``round_number`` (2, 3, ...): what the requested tool observed,
    its images (highlighted versions of the question's images), and the reply format again.

    Without a result, ``no_tool_reason`` (or the request's note) says why no tool ran.
    """
    prompt_dir = run.config.prompt_dir
    head = render(
        "judge_round.j2",
        prompt_dir=prompt_dir,
        round=round_number,
        max_rounds=run.config.max_rounds,
        tool=result.tool if result is not None else None,
        query=request.query or "",
        highlighted=_say_dimmed(run, result),
        observation=result.text if result is not None else "",
        note=no_tool_reason or request.note or "no tool was named",
    )
    parts: list[TextPart | ImagePart] = [TextPart(head)]
    if result is not None:
        for index, role in enumerate(question.image_roles, start=1):
            if role in result.images:
                label = f"Image {index} ({result.tool}): {run.role_label(role)}"
                parts.append(TextPart(label))
                parts.append(ImagePart(run.encode(result.images[role]), role))
        parts += view_parts(run, result, len(question.image_roles) + 1)
    parts.append(TextPart(_reply_format(run, can_request_tool, tool_names)))
    return Message("user", tuple(parts))


def view_parts(run: SampleRun, result: ToolResult, first: int) -> list[TextPart | ImagePart]:
    """The images a tool adds (``ToolResult.views``, e.g. Zoom's crops), each labelled with
    its number (from ``first``), the tool and what it is; the image part is labelled
    ``<tool>:<role>`` (``Zoom:output``)."""
    parts: list[TextPart | ImagePart] = []
    for index, view in enumerate(result.views, start=first):
        parts.append(TextPart(f"Image {index} ({result.tool}): {view.caption}"))
        parts.append(ImagePart(run.encode(view.image), f"{result.tool}:{view.role}"))
    return parts


def parse_judge_reply(
    text: str, can_request_tool: bool, tool_names: list[str], *, strict: bool = True
) -> Judgement | ToolRequest:
    """A :class:`Judgement`, or a :class:`ToolRequest` when the judge may and does ask for one.

    A request naming a tool that is not offered is a :class:`ParseError` (the judge is
    re-asked) unless ``strict`` is False: then it becomes a request without a tool, with a
    note saying why.
    """
    if can_request_tool:
        try:
            data = extract_json(text, dict)
        except ParseError:
            data = None
        if isinstance(data, dict) and "score" not in data and "tool" in data:
            raw = str(data.get("tool") or "None").strip()
            query = str(data.get("query") or "").strip() or None
            thought = str(data.get("thought", ""))
            if raw.lower() in ("none", "null", ""):
                return ToolRequest(thought, None, query)
            tool = match_offered_tool(raw, tool_names)
            if tool is None:
                why = why_not_offered(raw, tool_names)
                if strict:
                    raise ParseError(f"{why}; ask for an offered tool or give the score", text)
                return ToolRequest(thought, None, query, note=f"{why} (after the re-asks)")
            return ToolRequest(thought, tool, query)
    score, reasoning = parse_judgement(text)
    return Judgement(score, reasoning)
