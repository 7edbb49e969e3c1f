"""The request and response bodies of ``POST /v1/score`` (the service's own API)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cigeval.score import Evidence

#: An image role's value: one image, or a list for the roles that take several.
ImageField = str | list[str]


class ScoreItem(BaseModel):
    """One sample to judge: the task, its text, its images and (optionally) its GRPO group."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, description="the item's id (default: its index)")
    task: str | None = Field(
        None, description="a registered task id (default: the server's --default-task)"
    )
    prompt: str | None = None
    instruction: str | None = None
    subject: str | None = None
    concepts: list[str] | None = None
    control_type: str | None = None
    images: dict[str, ImageField] = Field(
        default_factory=dict,
        description="role -> base64 image file (PNG, JPEG, ...), e.g. {'output': '...'}",
    )
    image_paths: dict[str, ImageField] = Field(
        default_factory=dict,
        description="role -> path inside the server's --image-root (refused without it)",
    )
    group: str | None = Field(
        None, description="the GRPO group (one prompt's N samples); tie statistics use it"
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="passed through")


class ScoreRequest(BaseModel):
    """A batch of items; they are judged concurrently and answered in order."""

    model_config = ConfigDict(extra="forbid")

    items: list[ScoreItem] = Field(
        min_length=1, description="an item that does not fit the schema is its own error"
    )
    reasoning: bool = Field(
        False, description="return each sub-question's reasoning (also: the server's --reasoning)"
    )


class SubScoreResult(BaseModel):
    """One sub-question's score, the judge's reason when asked (plain text) and the regions
    its tools found (``evidence``: boxes in each image's own pixels, labels as plain text)."""

    question_id: str
    score: float | None
    reasoning: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)


class ItemResult(BaseModel):
    """The outcome of one item: ``ok`` with a score, ``error`` with why, or ``timeout``."""

    index: int
    id: str
    group: str | None = None
    status: Literal["ok", "error", "timeout"]
    score: float | None = None
    reward: float | None = Field(
        None,
        description="what a trainer should use: the score, or where there is none the "
        "server's --fill-unscored value (None under nan)",
    )
    filled: bool = Field(False, description="reward is a fill-in, not the judge's score")
    sub_scores: list[SubScoreResult] = Field(default_factory=list)
    calibrated: dict[str, Any] | None = Field(
        None,
        description="with --calibration: the calibrated value and its interval, "
        '{"value": v, "interval": [lo, hi]} (docs/calibration.md); score stays the raw one',
    )
    error: str | None = None
    latency_ms: int = 0
    calls: int = Field(0, description="judge model calls made for the item")
    cached_calls: int = Field(0, description="of those, answered by the response cache")


class BatchStats(BaseModel):
    """Counts of one batch, and how often the scores of a group tie."""

    items: int
    ok: int
    error: int
    timeout: int
    parse_failures: int = Field(description="judge replies that could not be read")
    filled: int = Field(0, description="items whose reward is a --fill-unscored fill-in")
    groups: int = Field(
        description="groups with at least two scored items (a group: the one named, else "
        "the prompt and its condition images)"
    )
    tied_group_share: float | None = Field(
        description="share of those groups whose scores all tie (None: no such group)"
    )
    mean_group_spread: float | None = Field(
        description="mean of max - min score within those groups (None: no such group)"
    )


class ScoreResponse(BaseModel):
    """Per-item results in input order, and the batch's statistics."""

    results: list[ItemResult]
    stats: BatchStats
    judge: str
    score_mode: str
