"""The tools' own settings, nested in :class:`cigeval.EvalConfig` as ``grounding`` and
``difference``; each field names its command-line flag."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GroundingConfig(BaseModel):
    """GroundingDINO settings (transformers' zero-shot object detection)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    device: str | None = Field(
        None,
        description="torch device of the detector (default: cuda if available)",
        json_schema_extra={"flag": "--grounding-device"},
    )


class DifferenceConfig(BaseModel):
    """Pixel-difference settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blur_kernel: int = Field(
        5,
        ge=1,
        description="Gaussian blur size before differencing (odd)",
        json_schema_extra={"flag": "--diff-blur"},
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
    max_regions: int = Field(
        20,
        ge=1,
        description="changed regions reported at most",
        json_schema_extra={"flag": "--diff-max-regions"},
    )
