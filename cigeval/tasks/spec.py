"""TaskSpec: what a task needs as input and how it splits into sub-questions."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cigeval.errors import InputError
from cigeval.tasks.labels import SIDE_BY_SIDE_CONCEPTS, condition_label, role_label


class SampleImageRoles(Protocol):
    """The images of a sample as a task reads them (:class:`cigeval.sample.SampleImages`)."""

    def provided(self) -> dict[str, Any]:
        """The roles that are set."""
        ...


class TaskSample(Protocol):
    """What a task reads of a sample (:class:`cigeval.sample.Sample` is one): its id, task,
    concept names, images, candidates and text fields (other fields by name). Tasks import
    nothing of the sample module, which checks its samples against them."""

    id: str
    task: str
    concepts: list[str] | None

    @property
    def images(self) -> SampleImageRoles: ...

    @property
    def candidates(self) -> Mapping[str, Any] | None: ...

    def text_fields(self) -> dict[str, str]: ...


#: The task whose two concept references may come as one side-by-side ``images.subject``.
_SIDE_BY_SIDE_TASK = "multi_concept_ic"


def side_by_side_subjects(sample: TaskSample) -> bool:
    """True when a multi-concept sample gives both concepts in one side-by-side image.

    Benchmarks such as ImagenHub ship the two concept references of a multi-concept
    composition as one image, first concept on the left, second on the right:
    ``images.subject`` instead of ``images.subjects``. The image loader then splits it at
    the middle.
    """
    provided = sample.images.provided()
    one_image = "subject" in provided and "subjects" not in provided
    return sample.task == _SIDE_BY_SIDE_TASK and one_image


def field_text(sample: TaskSample, name: str) -> str | None:
    """The value of text field ``name`` of ``sample`` (``concepts[i]``: the i-th concept).

    A side-by-side multi-concept sample without concept names gets the concept described by
    its half of the reference image ("the concept shown in the left half ...").
    """
    if name.startswith("concepts["):
        index = int(name[len("concepts[") : -1])
        concepts = sample.concepts or []
        if index < len(concepts):
            return concepts[index]
        if side_by_side_subjects(sample) and index < len(SIDE_BY_SIDE_CONCEPTS):
            return SIDE_BY_SIDE_CONCEPTS[index]
        return None
    value = getattr(sample, name, None)
    return None if value is None else str(value)


@dataclass(frozen=True)
class SubQuestion:
    """One fine-grained question of a task, judged 0-10 on its own.

    ``image_roles`` are the images shown to the judge, in order (e.g. ``("source", "output")``).
    The scoring rules shown to the judge come from ``template`` (a template name in
    ``cigeval/prompts``, replaceable with ``--prompt-dir``) or from ``rules`` (the text itself,
    as user tasks give it; Jinja, with the sample's text fields as variables).
    ``condition_field`` is the text shown with the rules (prompt, instruction, subject, ...);
    ``extra_conditions`` are further text fields shown after it (the multi-concept similarity
    questions show the concept and the prompt, as the paper does).
    ``default_query`` gives the Grounding query when the planner names none;
    ``official_query``, where set, replaces it under ``grounding.queries="official"`` (the
    official code's query where it differs, e.g. the whole prompt for subject similarity).
    ``planned_with`` names the question whose tool choice this one takes under the paper's
    planner prompt, where the planner is asked about both as one task worded
    ``plan_question`` (the official planner asks about both concept similarities at once).
    """

    id: str
    question: str
    image_roles: tuple[str, ...]
    template: str | None = None
    condition_field: str | None = None
    default_query: Callable[[TaskSample], str | None] | None = field(default=None, compare=False)
    rules: str | None = None
    extra_conditions: tuple[str, ...] = ()
    official_query: Callable[[TaskSample], str | None] | None = field(default=None, compare=False)
    planned_with: str | None = None
    plan_question: str | None = None

    def __post_init__(self) -> None:
        if (self.template is None) == (self.rules is None):
            raise ValueError(f"sub-question {self.id!r} needs exactly one of template or rules")

    def condition_text(self, sample: TaskSample) -> str | None:
        """The text condition shown with this question, if any."""
        if self.condition_field is None:
            return None
        return field_text(sample, self.condition_field)

    def condition_label(self) -> str:
        """How the condition text is introduced to the judge, e.g. 'Editing instruction'."""
        return condition_label(self.condition_field) if self.condition_field else ""

    def condition_lines(self, sample: TaskSample) -> list[tuple[str, str]]:
        """Every condition shown with this question, as (label, text), in order."""
        lines = []
        for name in (self.condition_field, *self.extra_conditions):
            text = field_text(sample, name) if name is not None else None
            if name is not None and text:
                lines.append((condition_label(name), text))
        return lines

    def rules_text(
        self, sample: TaskSample, prompt_dir: str | None = None, variant: str = "paper"
    ) -> str:
        """The scoring rules the judge reads for this question.

        ``variant="extended"`` reads ``<template>_extended.j2`` where there is one (the
        ``extended`` method's rules, which say what to compare); the paper's rules are
        ``<template>.j2``.
        """
        from cigeval.prompts import has_template, render, render_string

        if self.rules is not None:
            return render_string(self.rules, **sample.text_fields())
        name = f"{self.template}_{variant}.j2"
        if variant == "paper" or not has_template(name, prompt_dir):
            name = f"{self.template}.j2"
        return render(name, prompt_dir=prompt_dir)


@dataclass(frozen=True)
class TaskSpec:
    """A conditional generation task: its inputs and its sub-questions.

    ``image_labels`` names image roles for the judge where the default labels do not fit
    (user tasks with roles of their own); ``processed_condition`` tells the planner that tools
    do not help on the condition image (edges, depth maps, poses).
    """

    id: str
    title: str
    text_fields: tuple[str, ...]
    image_roles: tuple[str, ...]
    sub_questions: tuple[SubQuestion, ...]
    processed_condition: bool = False
    #: Used when given, not required (e.g. the subject's name, the mask).
    optional_text_fields: tuple[str, ...] = ()
    optional_image_roles: tuple[str, ...] = ()
    image_labels: Mapping[str, str] = field(default_factory=dict)

    def role_label(self, role: str) -> str:
        """Describe an image role for the judge, e.g. 'source' -> 'the original image...'."""
        return self.image_labels.get(role) or role_label(role)

    @property
    def declared_text_fields(self) -> tuple[str, ...]:
        """Every text field the task reads, required or optional."""
        return (*self.text_fields, *self.optional_text_fields)

    @property
    def declared_image_roles(self) -> tuple[str, ...]:
        """Every image role the task reads, required or optional."""
        return (*self.image_roles, *self.optional_image_roles)

    def validate_sample(self, sample: TaskSample) -> None:
        """Raise :class:`InputError` naming every missing field or image of ``sample``."""
        problems: list[str] = []
        for name in self.text_fields:
            if not getattr(sample, name, None):
                problems.append(f"missing text field {name!r}")
        concepts = sample.concepts
        if (
            "concepts" in self.declared_text_fields
            and concepts is not None
            and (len(concepts) != 2 or not all(isinstance(v, str) and v for v in concepts))
        ):
            problems.append("'concepts' must list exactly two concept names")
        provided = sample.images.provided()
        for role in self.image_roles:
            if role == "subjects":
                subjects = provided.get("subjects")
                if subjects is None and side_by_side_subjects(sample):
                    continue
                if subjects is None or len(subjects) != 2:
                    problems.append(
                        "images.subjects must list two concept images "
                        "(or give one side-by-side image as images.subject)"
                    )
            elif role == "output" and "output" not in provided and sample.candidates:
                problems.append(
                    "the sample holds candidates, not one images.output: judge them with "
                    "rubric pairwise or pointwise"
                )
            elif role not in provided:
                problems.append(f"missing image {role!r} (images.{role})")
        if problems:
            raise InputError(f"task {self.id}: " + "; ".join(problems), sample.id)

    def check_declared(
        self,
        sample: TaskSample,
        fields: Sequence[str],
        roles: Sequence[str],
        other_fields: Sequence[str] = (),
    ) -> None:
        """Raise ValueError when text ``fields`` or image ``roles`` beyond a sample's built-in
        ones are not declared by this task. A misspelling of a required field that is missing
        is named as that missing field; of another field (``other_fields`` are the sample's
        own, offered too), as a suggestion."""
        unknown = [f for f in fields if f not in self.declared_text_fields]
        unknown += [f"images.{r}" for r in roles if r not in self.declared_image_roles]
        if not unknown:
            return
        provided = sample.images.provided()
        missing = [f for f in self.text_fields if not getattr(sample, f, None)]
        missing += [f"images.{r}" for r in self.image_roles if r not in provided]
        known = [*self.declared_text_fields, *other_fields]
        known += [f"images.{r}" for r in self.declared_image_roles]
        problems, unexplained = [], []
        for name in unknown:
            close = difflib.get_close_matches(name, [*missing, *known], n=1, cutoff=0.75)
            if close and close[0] in missing:
                kind = "image" if close[0].startswith("images.") else "field"
                problems.append(
                    f"missing required {kind} {close[0]!r} (did you mean it instead of {name!r}?)"
                )
            elif close:
                problems.append(f"unknown field {name!r} (did you mean {close[0]!r}?)")
            else:
                unexplained.append(name)
        if unexplained:
            problems.append(
                f"unknown field(s) {', '.join(unexplained)} for task {self.id} "
                "(a task of your own must declare its text fields and image roles)"
            )
        raise ValueError("; ".join(problems))
