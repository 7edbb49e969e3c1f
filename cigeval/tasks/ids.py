"""The seven conditional image generation task identifiers (CIGEval paper §3.1)."""

from __future__ import annotations

from typing import Literal, get_args

TaskId = Literal[
    "text_guided_ig",
    "mask_guided_ie",
    "text_guided_ie",
    "subject_driven_ig",
    "subject_driven_ie",
    "multi_concept_ic",
    "control_guided_ig",
]

TASK_IDS: tuple[str, ...] = get_args(TaskId)

#: ImagenHub folder names (as used by the human-rating files) for each task id.
IMAGENHUB_TASK_NAMES: dict[str, str] = {
    "text_guided_ig": "ImagenHub_Text-Guided_IG",
    "mask_guided_ie": "ImagenHub_Mask-Guided_IE",
    "text_guided_ie": "ImagenHub_Text-Guided_IE",
    "control_guided_ig": "ImagenHub_Control-Guided_IG",
    "subject_driven_ig": "ImagenHub_Subject-Driven_IG",
    "subject_driven_ie": "ImagenHub_Subject-Driven_IE",
    "multi_concept_ic": "ImagenHub_Multi-Concept_IC",
}

#: Reverse mapping: ImagenHub folder name -> task id.
TASK_ID_BY_IMAGENHUB_NAME: dict[str, str] = {v: k for k, v in IMAGENHUB_TASK_NAMES.items()}

#: Column order of the published tables (paper Table 3).
PAPER_TASK_ORDER: tuple[str, ...] = (
    "text_guided_ig",
    "mask_guided_ie",
    "text_guided_ie",
    "control_guided_ig",
    "subject_driven_ig",
    "subject_driven_ie",
    "multi_concept_ic",
)
