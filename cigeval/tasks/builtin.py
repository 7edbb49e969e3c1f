"""The seven built-in tasks and their sub-questions (CIGEval paper §3.3, appendix A)."""

from __future__ import annotations

from collections.abc import Callable

from cigeval.tasks.registry import register_task
from cigeval.tasks.spec import SubQuestion, TaskSample, TaskSpec


def _text(name: str) -> Callable[[TaskSample], str | None]:
    def query(sample: TaskSample) -> str | None:
        value = getattr(sample, name, None)
        return str(value) if value else None

    return query


def _first_of(*queries: Callable[[TaskSample], str | None]) -> Callable[[TaskSample], str | None]:
    def query(sample: TaskSample) -> str | None:
        return next((q for q in (f(sample) for f in queries) if q), None)

    return query


def _concept(index: int) -> Callable[[TaskSample], str | None]:
    def query(sample: TaskSample) -> str | None:
        concepts = sample.concepts or []
        return concepts[index] if index < len(concepts) else None

    return query


def _background(sample: TaskSample) -> str:
    return "background"


# Default Grounding queries (used when the planner names none), as the official code grounds
# each sub-question: the whole prompt or instruction, the subject or concept name, and the
# literal "background" for background preservation. Where the official code needs a name the
# sample may lack (concept names), the prompt stands in. One official query differs from the
# default: subject-driven generation's subject similarity grounds the whole prompt there.
_PROMPT = _text("prompt")


def _prompt_following(template: str = "prompt_following") -> SubQuestion:
    return SubQuestion(
        id="prompt_following",
        question="Does the generated image follow the text prompt?",
        image_roles=("output",),
        template=template,
        condition_field="prompt",
        default_query=_PROMPT,
    )


def _edit_pair(instruction_field: str = "instruction") -> tuple[SubQuestion, SubQuestion]:
    instruction = _text(instruction_field)
    return (
        SubQuestion(
            id="edit_success",
            question="Does the edited image follow the editing instruction?",
            image_roles=("source", "output"),
            template="edit_success",
            condition_field=instruction_field,
            default_query=instruction,
        ),
        SubQuestion(
            id="over_editing",
            question=(
                "Is the edit minimal, leaving what the instruction does not mention unchanged?"
            ),
            image_roles=("source", "output"),
            template="over_editing",
            condition_field=instruction_field,
            default_query=instruction,
        ),
    )


def _subject_similarity(
    query: Callable[[TaskSample], str | None],
    official_query: Callable[[TaskSample], str | None] | None = None,
) -> SubQuestion:
    return SubQuestion(
        id="subject_similarity",
        question="Does the subject in the generated image look like its reference image?",
        image_roles=("subject", "output"),
        template="subject_similarity",
        condition_field="subject",
        default_query=query,
        official_query=official_query,
    )


def _concept_similarity(index: int) -> SubQuestion:
    ordinal = ("first", "second")[index]
    # The official planner is asked about both concepts as one task; the second takes the
    # first one's tool (under the paper's planner prompt).
    return SubQuestion(
        id=f"concept_{index + 1}_similarity",
        question=(
            f"Does the {ordinal} concept in the generated image look like its reference image?"
        ),
        image_roles=(f"subject_{index + 1}", "output"),
        template="concept_similarity",
        condition_field=f"concepts[{index}]",
        extra_conditions=("prompt",),
        default_query=_first_of(_concept(index), _PROMPT),
        planned_with="concept_1_similarity" if index == 1 else None,
        plan_question=(
            "Do the two concepts in the generated image look like their reference images?"
            if index == 0
            else None
        ),
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
            # The official code grounds the whole prompt here, in both images.
            _subject_similarity(_first_of(_text("subject"), _PROMPT), official_query=_PROMPT),
            _prompt_following(),
        ),
    ),
    TaskSpec(
        id="subject_driven_ie",
        title="Subject-driven image editing",
        text_fields=("subject",),
        image_roles=("source", "subject", "output"),
        sub_questions=(
            _subject_similarity(_text("subject")),
            SubQuestion(
                id="background_preservation",
                question="Is the background of the source image preserved?",
                image_roles=("source", "output"),
                template="background_preservation",
                default_query=_background,
            ),
        ),
    ),
    TaskSpec(
        id="multi_concept_ic",
        title="Multi-concept image composition",
        text_fields=("prompt",),
        optional_text_fields=("concepts",),
        image_roles=("subjects", "output"),
        sub_questions=(_concept_similarity(0), _concept_similarity(1), _prompt_following()),
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
                # No condition text: the paper shows the judge only the two images here.
                default_query=_PROMPT,
            ),
            _prompt_following(),
        ),
    ),
)

for _spec in BUILTIN_TASKS:
    register_task(_spec)
