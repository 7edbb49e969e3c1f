"""The seven built-in tasks and their sub-questions (CIGEval paper §3.3, appendix A)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cigeval.sample import Sample
from cigeval.tasks.registry import register_task
from cigeval.tasks.spec import SubQuestion, TaskSpec


def _subject(sample: Sample) -> str | None:
    return sample.subject


def _concept(index: int) -> Callable[[Sample], str | None]:
    def query(sample: Sample) -> str | None:
        concepts = sample.concepts or []
        return concepts[index] if index < len(concepts) else None

    return query


def _prompt_following(template: str = "prompt_following") -> SubQuestion:
    return SubQuestion(
        id="prompt_following",
        question="Does the generated image follow the text prompt?",
        image_roles=("output",),
        template=template,
        condition_field="prompt",
    )


def _edit_pair(instruction_field: str = "instruction") -> tuple[SubQuestion, SubQuestion]:
    return (
        SubQuestion(
            id="edit_success",
            question="Does the edited image follow the editing instruction?",
            image_roles=("source", "output"),
            template="edit_success",
            condition_field=instruction_field,
        ),
        SubQuestion(
            id="over_editing",
            question=(
                "Is the edit minimal, leaving what the instruction does not mention unchanged?"
            ),
            image_roles=("source", "output"),
            template="over_editing",
            condition_field=instruction_field,
        ),
    )


def _subject_similarity(
    role: str, qid: str, field: str, query: Callable[[Sample], str | None], what: str
) -> SubQuestion:
    return SubQuestion(
        id=qid,
        question=f"Does {what} in the generated image look like its reference image?",
        image_roles=(role, "output"),
        template="subject_similarity",
        condition_field=field,
        default_query=query,
    )


BUILTIN_TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        id="text_guided_ig",
        title="Text-guided image generation",
        text_fields=("prompt",),
        image_roles=("output",),
        sub_questions=(_prompt_following(),),
    ),
    TaskSpec(
        id="mask_guided_ie",
        title="Mask-guided image editing",
        text_fields=("instruction",),
        image_roles=("source", "output"),
        optional_image_roles=("mask",),
        sub_questions=_edit_pair(),
    ),
    TaskSpec(
        id="text_guided_ie",
        title="Text-guided image editing",
        text_fields=("instruction",),
        image_roles=("source", "output"),
        sub_questions=_edit_pair(),
    ),
    TaskSpec(
        id="subject_driven_ig",
        title="Subject-driven image generation",
        text_fields=("prompt",),
        optional_text_fields=("subject",),
        image_roles=("subject", "output"),
        sub_questions=(
            _subject_similarity(
                "subject", "subject_similarity", "subject", _subject, "the subject"
            ),
            _prompt_following(),
        ),
    ),
    TaskSpec(
        id="subject_driven_ie",
        title="Subject-driven image editing",
        text_fields=("subject",),
        image_roles=("source", "subject", "output"),
        sub_questions=(
            _subject_similarity(
                "subject", "subject_similarity", "subject", _subject, "the subject"
            ),
            SubQuestion(
                id="background_preservation",
                question="Is the background of the source image preserved?",
                image_roles=("source", "output"),
                template="background_preservation",
            ),
        ),
    ),
    TaskSpec(
        id="multi_concept_ic",
        title="Multi-concept image composition",
        text_fields=("prompt",),
        optional_text_fields=("concepts",),
        image_roles=("subjects", "output"),
        sub_questions=(
            _subject_similarity(
                "subject_1", "concept_1_similarity", "concepts[0]", _concept(0), "the first concept"
            ),
            _subject_similarity(
                "subject_2",
                "concept_2_similarity",
                "concepts[1]",
                _concept(1),
                "the second concept",
            ),
            _prompt_following(),
        ),
    ),
    TaskSpec(
        id="control_guided_ig",
        title="Control-guided image generation",
        text_fields=("prompt",),
        image_roles=("control", "output"),
        processed_condition=True,
        sub_questions=(
            SubQuestion(
                id="control_following",
                question="Does the generated image follow the structure of the control image?",
                image_roles=("control", "output"),
                template="control_following",
                condition_field="control_type",
            ),
            _prompt_following(),
        ),
    ),
)

for _spec in BUILTIN_TASKS:
    register_task(_spec)
