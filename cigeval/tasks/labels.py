"""Human-readable names for image roles and text conditions used in prompts."""

from __future__ import annotations

ROLE_LABELS: dict[str, str] = {
    "output": "the AI-generated image to evaluate",
    "source": "the original image before editing",
    "mask": "the mask of the region to edit (white = edit here)",
    "subject": "the reference subject image",
    "subject_1": "the reference image of the first concept",
    "subject_2": "the reference image of the second concept",
    "control": "the processed control image",
    "ground_truth": "the reference (ground-truth) edit",
}

#: Labels of a multi-concept sample's reference when both concepts come in one side-by-side
#: image (``images.subject``), which is split at the middle into ``subject_1``/``subject_2``.
SIDE_BY_SIDE_LABELS: dict[str, str] = {
    "subject": (
        "the reference images of both concepts side by side (left half: the first concept; "
        "right half: the second concept)"
    ),
    "subject_1": "the left half of the side-by-side reference image: the first concept",
    "subject_2": "the right half of the side-by-side reference image: the second concept",
}

#: What the concept questions call their concept when a side-by-side sample names none.
SIDE_BY_SIDE_CONCEPTS: tuple[str, str] = (
    "the concept shown in the left half of the reference image",
    "the concept shown in the right half of the reference image",
)

CONDITION_LABELS: dict[str, str] = {
    "prompt": "Text prompt",
    "instruction": "Editing instruction",
    "subject": "Subject",
    "concepts[0]": "Subject",
    "concepts[1]": "Subject",
    "control_type": "Control type",
}


def role_label(role: str) -> str:
    """Describe an image role for the model, e.g. 'source' -> 'the original image...'."""
    if role.startswith("output_"):
        return f"edited image {role.split('_', 1)[1]}"
    return ROLE_LABELS.get(role, role.replace("_", " "))


def condition_label(field: str) -> str:
    """How a text field is introduced to the model, e.g. 'instruction' -> 'Editing instruction'."""
    return CONDITION_LABELS.get(field, field.replace("_", " ").capitalize())
