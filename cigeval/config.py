"""One frozen configuration object; CLI flags map onto its fields."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cigeval.messages import GenerationSettings

Aggregate = Literal["min", "mean", "median", "max"]


def default_cache_dir() -> Path:
    """Per-user cache directory: ``$CIGEVAL_CACHE_DIR`` or ``$XDG_CACHE_HOME/cigeval``."""
    if os.environ.get("CIGEVAL_CACHE_DIR"):
        return Path(os.environ["CIGEVAL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cigeval"


class GroundingConfig(BaseModel):
    """GroundingDINO settings (transformers' zero-shot object detection)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checkpoint: str = "IDEA-Research/grounding-dino-tiny"
    box_threshold: float = Field(0.35, ge=0, le=1)
    text_threshold: float = Field(0.25, ge=0, le=1)
    device: str | None = Field(None, description="torch device; default: cuda if available.")


class DifferenceConfig(BaseModel):
    """Pixel-difference settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blur_kernel: int = Field(5, ge=1, description="Gaussian blur size before differencing (odd).")
    threshold: int = Field(30, ge=0, le=255, description="Per-pixel change threshold (0-255).")
    dilation: int = Field(7, ge=0, description="Dilation kernel size joining nearby changes.")
    min_area_fraction: float = Field(
        0.0005, ge=0, le=1, description="Regions smaller than this fraction of the image are noise."
    )
    max_regions: int = Field(20, ge=1)


class EvalConfig(BaseModel):
    """Everything that decides how a sample is judged. Recorded with every Score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rubric: str = Field("cigeval", description="Judging scheme: cigeval, viescore, lmm_score, ...")
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(1024, ge=1)
    seed: int | None = Field(0, description="Sent where the API takes a seed.")
    top_p: float | None = None
    aggregate: Aggregate = Field("min", description="How sub-scores combine (paper: min).")
    max_rounds: int = Field(
        1, ge=1, description="Thought/action/observation rounds per sub-question (paper: 1)."
    )
    max_parse_retries: int = Field(
        2, ge=0, description="Re-asks of the same model after an unparseable reply."
    )
    tools: tuple[str, ...] | None = Field(
        None, description="Tool names offered to the planner; None = every registered tool."
    )
    grounding: GroundingConfig = Field(default_factory=GroundingConfig)
    difference: DifferenceConfig = Field(default_factory=DifferenceConfig)
    image_format: Literal["PNG", "JPEG"] = "PNG"
    prompt_dir: str | None = Field(
        None, description="Folder of .j2 templates replacing built-in ones of the same name."
    )
    rubric_options: dict[str, Any] = Field(
        default_factory=dict, description="Rubric-specific settings, e.g. {'mode': 'online'}."
    )

    def generation(self, temperature: float | None = None) -> GenerationSettings:
        """The generation settings for a judge call."""
        return GenerationSettings(
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            top_p=self.top_p,
        )

    def record(self) -> dict[str, Any]:
        """JSON-serialisable form stored with each Score (never holds secrets)."""
        return self.model_dump(mode="json")


class RunConfig(BaseModel):
    """How a batch runs: concurrency, limits, caching. None of it changes an answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int = Field(8, ge=1, description="Samples evaluated at once.")
    max_calls_in_flight: int | None = Field(
        None, ge=1, description="Model calls in flight at once; default 2 x concurrency."
    )
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    timeout_s: float = Field(120.0, gt=0, description="Per-call timeout.")
    max_retries: int = Field(6, ge=0, description="Retries of a failed call (429, 5xx, ...).")
    retry_backoff_s: float = Field(
        0.5,
        gt=0,
        description="Wait before the first retry; doubles each retry (jittered, capped at 30 s). "
        "A server's Retry-After takes precedence.",
    )
    cache_dir: Path | None = Field(default_factory=default_cache_dir)
    use_cache: bool = True
