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

    items: list[ScoreItem] = Field(min_length=1)


class SubScoreResult(BaseModel):
    """One sub-question's score, the judge's reason (HTML-escaped) and the regions its tools
    found (``evidence``: boxes in each image's own pixels, labels HTML-escaped)."""

    question_id: str
    score: float | None
    reasoning: str = ""
    evidence: list[Evidence] = Field(default_factory=list)


class ItemResult(BaseModel):
    """The outcome of one item: ``ok`` with a score, ``error`` with why, or ``timeout``."""

    index: int
    id: str
    group: str | None = None
    status: Literal["ok", "error", "timeout"]
    score: float | None = None
    sub_scores: list[SubScoreResult] = Field(default_factory=list)
    error: str | None = None
    latency_ms: int = 0
    calls: int = Field(0, description="judge model calls made for the item")


class BatchStats(BaseModel):
    """Counts of one batch, and how often the scores of a group tie."""

    items: int
    ok: int
    error: int
    timeout: int
    parse_failures: int = Field(description="judge replies that could not be read")
    groups: int = Field(description="groups with at least two scored items")
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
