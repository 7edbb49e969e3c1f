"""VIEScore (Ku et al. 2024): two tool-free judge calls per sample, semantic consistency and
perceptual quality, each answered as a list of 0-10 scores.

SC asks one score per sub-question of the task (the same sub-questions, rules and images the
agentic CIGEval rubric uses, so the two compare question by question); PQ asks for
[naturalness, artifacts] on the output image. SC = min(SC list) / 10, PQ = min(PQ list) / 10,
O = sqrt(SC * PQ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cigeval.errors import InputError, ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.parsing import extract_json, parse_score
from cigeval.rubrics._shared import choice_option, failed_verdict, render_for, rubric_options
from cigeval.sample import Sample
from cigeval.sample_run import SampleRun
from cigeval.score import SubScore, Verdict
from cigeval.tasks import SubQuestion, TaskSpec, get_task

#: The PQ items, in the order the judge lists them.
PQ_ITEMS: tuple[tuple[str, str], ...] = (
    ("pq_naturalness", "Does the image look natural (perspective, lighting, scale, coherence)?"),
    ("pq_artifacts", "Is the image free of artifacts (distortion, blur, deformed parts)?"),
)
_ORDINALS = ("first", "second", "third", "fourth")


@dataclass(frozen=True)
class ListReply:
    """A parsed ``{"score": [...], "reasoning": "..."}`` reply."""

    scores: tuple[float, ...]
    reasoning: str


def parse_score_list(text: str, count: int) -> ListReply:
    """Parse a reply holding a list of exactly ``count`` scores from 0 to 10.

    Raises :class:`ParseError` naming the problem (no list, wrong length, a value out of range).
    """
    data = extract_json(text, dict)
    lowered = {str(k).strip().lower(): v for k, v in data.items()}
    values = lowered.get("score", lowered.get("scores"))
    if not isinstance(values, list):
        raise ParseError(f'"score" must be a JSON list of {count} number(s) from 0 to 10', text)
    if len(values) != count:
        raise ParseError(
            f'"score" lists {len(values)} number(s) but exactly {count} are required, '
            "one per aspect in order",
            text,
        )
    scores = []
    for position, value in enumerate(values, start=1):
        try:
            scores.append(parse_score(value, 0, 10))
        except ParseError as exc:
            raise ParseError(f'"score" item {position}: {exc}', text) from None
    reasoning = lowered.get("reasoning", lowered.get("reason", ""))
    return ListReply(tuple(scores), str(reasoning or "").strip())


#: Which half of a side-by-side multi-concept reference each concept role is.
_HALVES = {"subject_1": "left", "subject_2": "right"}


def _shown_role(run: SampleRun, role: str) -> str:
    """The role whose image is shown for ``role``: a side-by-side reference is shown whole,
    as VIEScore does, and each concept question names its half."""
    return "subject" if run.side_by_side and role in _HALVES else role


def image_plan(run: SampleRun, questions: tuple[SubQuestion, ...]) -> list[str]:
    """The roles to show, in first-use order; a role whose image is another role's (a
    side-by-side multi-concept image) is shown once."""
    shown: list[str] = []
    seen: dict[int, str] = {}
    for question in questions:
        for role in question.image_roles:
            role = _shown_role(run, role)
            if role not in run.images:
                raise InputError(f"viescore needs images.{role}", run.sample.id)
            key = id(run.loaded[role])
            if key not in seen:
                seen[key] = role
                shown.append(role)
    return shown


def _image_number(run: SampleRun, shown: list[str], role: str) -> int:
    role = _shown_role(run, role)
    first = next(r for r in shown if run.loaded[r] is run.loaded[role])
    return shown.index(first) + 1


def _image_name(run: SampleRun, shown: list[str], role: str) -> str:
    name = f"Image {_image_number(run, shown, role)}"
    if _shown_role(run, role) != role:
        return f"the {_HALVES[role]} half of {name}"
    return name


def build_sc_messages(run: SampleRun, spec: TaskSpec) -> list[Message]:
    """The SC request: labelled images, then every sub-question's rules and condition."""
    shown = image_plan(run, spec.sub_questions)
    parts: list[TextPart | ImagePart] = []
    for number, role in enumerate(shown, start=1):
        parts.append(TextPart(f"Image {number}: {run.role_label(role)}"))
        parts.append(ImagePart(run.encode(run.loaded[role]), role))
    questions: list[dict[str, Any]] = []
    for question in spec.sub_questions:
        names = [_image_name(run, shown, r) for r in question.image_roles]
        mapping = (
            ", ".join(f'"the {_ORDINALS[i]} image" is {name}' for i, name in enumerate(names))
            if len(names) > 1
            else ""
        )
        condition = question.condition_text(run.sample)
        questions.append(
            {
                "id": question.id,
                "images": " and ".join(names),
                "mapping": mapping,
                "rules": question.rules_text(run.sample, run.config.prompt_dir),
                "condition": condition,
                "condition_label": question.condition_label() or "Condition",
            }
        )
    count = len(spec.sub_questions)
    text = render_for(
        run,
        "rubric_viescore_sc.j2",
        task_title=spec.title,
        count=count,
        questions=questions,
        placeholders=", ".join(f"<{q.id}>" for q in spec.sub_questions),
        ids=", ".join(q.id for q in spec.sub_questions),
    )
    parts.append(TextPart(text))
    return [
        Message.text("system", render_for(run, "rubric_viescore_system.j2")),
        Message("user", tuple(parts)),
    ]


def build_pq_messages(run: SampleRun) -> list[Message]:
    """The PQ request: the output image and the naturalness/artifacts rules."""
    parts = (
        TextPart(f"Image 1: {run.task.role_label('output')}"),
        ImagePart(run.encode(run.loaded["output"]), "output"),
        TextPart(render_for(run, "rubric_viescore_pq.j2")),
    )
    return [
        Message.text("system", render_for(run, "rubric_viescore_system.j2")),
        Message("user", parts),
    ]


class ViescoreRubric:
    """VIEScore: SC and PQ lists from two plain judge calls; O = sqrt(SC * PQ).

    The value is O unless ``rubric_options={"primary": "SC" | "PQ"}``;
    ``dimensions`` holds SC, PQ and O in [0, 1]; ``sub_scores`` one 0-10 entry per SC
    sub-question plus ``pq_naturalness`` and ``pq_artifacts``. Within each dimension the
    scores combine by min, as VIEScore defines (``config.aggregate`` is not used).
    """

    name = "viescore"
    description = (
        "VIEScore: SC = min(sub-question scores), PQ = min(naturalness, artifacts), "
        "O = sqrt(SC*PQ), all /10; no tools."
    )

    def validate(self, sample: Sample) -> None:
        """The task's required text fields and images, as for the agentic rubric."""
        get_task(sample.task).validate_sample(sample)

    async def evaluate(self, run: SampleRun) -> Verdict:
        """Ask SC, then PQ; a failed Verdict (no numbers) if either never parses."""
        options = rubric_options(run, self.name, ["primary"])
        primary = choice_option(options, "primary", "O", ("SC", "PQ", "O"))
        spec = run.task
        questions = spec.sub_questions
        try:
            sc = await run.judge.ask(
                "rubric:viescore:SC",
                build_sc_messages(run, spec),
                lambda text: parse_score_list(text, len(questions)),
            )
        except ParseError as exc:
            return failed_verdict(exc, {"failed_dimension": "SC"})
        try:
            pq = await run.judge.ask(
                "rubric:viescore:PQ",
                build_pq_messages(run),
                lambda text: parse_score_list(text, len(PQ_ITEMS)),
            )
        except ParseError as exc:
            return failed_verdict(exc, {"failed_dimension": "PQ"})
        sc_value = min(sc.scores) / 10.0
        pq_value = min(pq.scores) / 10.0
        dimensions = {"SC": sc_value, "PQ": pq_value, "O": math.sqrt(sc_value * pq_value)}
        sub_scores = [
            SubScore(question_id=q.id, question=q.question, score=s, reasoning=sc.reasoning)
            for q, s in zip(questions, sc.scores, strict=True)
        ] + [
            SubScore(question_id=qid, question=text, score=s, reasoning=pq.reasoning)
            for (qid, text), s in zip(PQ_ITEMS, pq.scores, strict=True)
        ]
        return Verdict(
            value=dimensions[primary],
            dimensions=dict(dimensions),
            sub_scores=sub_scores,
            details={
                "primary": primary,
                "SC_scores": list(sc.scores),
                "PQ_scores": list(pq.scores),
                "SC_reasoning": sc.reasoning,
                "PQ_reasoning": pq.reasoning,
            },
        )
