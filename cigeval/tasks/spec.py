"""TaskSpec: what a task needs as input and how it splits into sub-questions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cigeval.errors import InputError

if TYPE_CHECKING:
    from cigeval.sample import Sample


@dataclass(frozen=True)
class SubQuestion:
    """One fine-grained question of a task, judged 0-10 on its own.

    ``image_roles`` are the images shown to the judge, in order (e.g. ``("source", "output")``).
    ``template`` names the scoring-rules template in ``cigeval/prompts``.
    ``condition_field`` is the text shown with the rules (prompt, instruction, subject, ...).
    ``default_query`` gives the Grounding noun phrase when the planner names none.
    """

    id: str
    question: str
    image_roles: tuple[str, ...]
    template: str
    condition_field: str | None = None
    default_query: Callable[[Sample], str | None] | None = field(default=None, compare=False)

    def condition_text(self, sample: Sample) -> str | None:
        """The text condition shown with this question, if any."""
        if self.condition_field is None:
            return None
        if self.condition_field.startswith("concepts["):
            index = int(self.condition_field[len("concepts[") : -1])
            concepts = sample.concepts or []
            return concepts[index] if index < len(concepts) else None
        value = getattr(sample, self.condition_field)
        return None if value is None else str(value)


@dataclass(frozen=True)
class TaskSpec:
    """A conditional generation task: its inputs and its sub-questions."""

    id: str
    title: str
    text_fields: tuple[str, ...]
    image_roles: tuple[str, ...]
    sub_questions: tuple[SubQuestion, ...]
    processed_condition: bool = False  # control images: tools do not help on them
    #: Used when given, not required (e.g. the subject's name, the mask).
    optional_text_fields: tuple[str, ...] = ()
    optional_image_roles: tuple[str, ...] = ()

    def validate_sample(self, sample: Sample) -> None:
        """Raise :class:`InputError` naming every missing field or image of ``sample``."""
        problems: list[str] = []
        for name in self.text_fields:
            if not getattr(sample, name):
                problems.append(f"missing text field {name!r}")
        concepts = sample.concepts
        wants_concepts = "concepts" in (*self.text_fields, *self.optional_text_fields)
        if (
            wants_concepts
            and concepts is not None
            and (len(concepts) != 2 or not all(isinstance(v, str) and v for v in concepts))
        ):
            problems.append("'concepts' must list exactly two concept names")
        provided = sample.images.provided()
        for role in self.image_roles:
            if role == "subjects":
                subjects = provided.get("subjects")
                if subjects is None and "subject" in provided:
                    continue  # one side-by-side image holds both concepts
                if subjects is None or len(subjects) != 2:
                    problems.append(
                        "images.subjects must list two concept images "
                        "(or give one side-by-side image as images.subject)"
                    )
            elif role not in provided:
                problems.append(f"missing image {role!r} (images.{role})")
        if problems:
            raise InputError(f"task {self.id}: " + "; ".join(problems), sample.id)


TASK_REGISTRY: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add or replace a task specification."""
    TASK_REGISTRY[spec.id] = spec
    return spec


def get_task(task_id: str) -> TaskSpec:
    """The TaskSpec for ``task_id``; raises KeyError listing the known ids."""
    try:
        return TASK_REGISTRY[task_id]
    except KeyError:
        raise KeyError(f"unknown task {task_id!r}; known: {', '.join(TASK_REGISTRY)}") from None
