"""The tools' own settings, nested in :class:`cigeval.EvalConfig` as ``grounding`` and
``difference``; each field names its command-line flag.

Each settings model has a ``preset``: ``cigeval`` (the defaults below) or ``official``, the
values of the official CIGEval code (HITsz-TMG/Agentic-CIGEval, ``tools/grding.py`` and
``tools/diff.py``). A preset fills in every field that is not given explicitly, so
``--difference-preset official --diff-threshold 40`` is the official Difference with another
threshold.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Grounding as the official code runs it: box and text thresholds 0.2, and only the best box
#: per phrase once boxes holding a smaller detection are dropped.
OFFICIAL_GROUNDING: dict[str, Any] = {
    "box_threshold": 0.2,
    "text_threshold": 0.2,
    "boxes": "best_per_phrase",
}

#: Difference as the official code runs it: 5x5 blur, grayscale difference above 45, one 3x3
#: dilation, boxes larger than 0.5% of the image, only the largest one.
OFFICIAL_DIFFERENCE: dict[str, Any] = {
    "blur_kernel": 5,
    "measure": "gray",
    "threshold": 45,
    "dilation": 3,
    "min_area_fraction": 0.005,
    "area_of": "box",
    "max_regions": 1,
}

Preset = Literal["cigeval", "official"]


def _fill_preset(data: Any, official: dict[str, Any]) -> Any:
    """Fill the fields a preset sets and the caller left out (before validation)."""
    if isinstance(data, dict) and data.get("preset") == "official":
        return {**official, **data}
    return data


class GroundingConfig(BaseModel):
    """GroundingDINO settings (transformers' zero-shot object detection)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: Preset = Field(
        "cigeval",
        description="defaults for the fields not given: cigeval, or official (the official "
        "code's thresholds 0.2/0.2 and best box per phrase)",
        json_schema_extra={"flag": "--grounding-preset"},
    )
    checkpoint: str = Field(
        "IDEA-Research/grounding-dino-tiny",
        description="GroundingDINO hub id or local folder",
        json_schema_extra={"flag": "--grounding-checkpoint"},
    )
    box_threshold: float = Field(
        0.35,
        ge=0,
        le=1,
        description="minimum box confidence",
        json_schema_extra={"flag": "--box-threshold"},
    )
    text_threshold: float = Field(
        0.25,
        ge=0,
        le=1,
        description="minimum phrase confidence",
        json_schema_extra={"flag": "--text-threshold"},
    )
    boxes: Literal["all", "best_per_phrase"] = Field(
        "all",
        description="highlight every box found, or (as the official code) drop boxes that hold "
        "a smaller detection and keep the best box per phrase",
        json_schema_extra={"flag": "--grounding-boxes"},
    )
    device: str | None = Field(
        None,
        description="torch device of the detector (default: cuda if available)",
        json_schema_extra={"flag": "--grounding-device"},
    )

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return _fill_preset(data, OFFICIAL_GROUNDING)


class DifferenceConfig(BaseModel):
    """Pixel-difference settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: Preset = Field(
        "cigeval",
        description="defaults for the fields not given: cigeval, or official (blur 5, "
        "grayscale threshold 45, dilation 3, boxes over 0.5 percent of the image, the "
        "largest only)",
        json_schema_extra={"flag": "--difference-preset"},
    )
    blur_kernel: int = Field(
        5,
        ge=1,
        description="Gaussian blur size before differencing (odd)",
        json_schema_extra={"flag": "--diff-blur"},
    )
    measure: Literal["max_channel", "gray"] = Field(
        "max_channel",
        description="per-pixel change: the largest channel difference, or the grayscale of "
        "the difference (official code; a change in blue alone counts 0.11 of its size)",
        json_schema_extra={"flag": "--diff-measure"},
    )
    threshold: int = Field(
        30,
        ge=0,
        le=255,
        description="per-pixel change threshold (0-255)",
        json_schema_extra={"flag": "--diff-threshold"},
    )
    dilation: int = Field(
        7,
        ge=0,
        description="dilation kernel size joining nearby changes",
        json_schema_extra={"flag": "--diff-dilation"},
    )
    min_area_fraction: float = Field(
        0.0005,
        ge=0,
        le=1,
        description="regions smaller than this fraction of the image are noise",
        json_schema_extra={"flag": "--diff-min-area"},
    )
    area_of: Literal["pixels", "box"] = Field(
        "pixels",
        description="what --diff-min-area measures: a region's changed pixels, or its "
        "bounding box (official code)",
        json_schema_extra={"flag": "--diff-area-of"},
    )
    max_regions: int = Field(
        20,
        ge=1,
        description="changed regions reported at most (the largest first)",
        json_schema_extra={"flag": "--diff-max-regions"},
    )

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return _fill_preset(data, OFFICIAL_DIFFERENCE)
