"""UniRL's reward-service wire format, so its client (``unirl.reward.remote``) works unchanged.

Request: ``{"requests": [{"history": [{"text", "image_b64"}, ...], "required_rewards": [...],
"metadata": {...}}]}``. One history turn is a T2I sample (prompt, image); two turns are an edit
(``history[0]`` the instruction and source, ``history[1]`` the instruction and edited image).
Response, one entry per request: ``{"results": [{reward: {"score": x, <sub-question>: y}}],
"errors": [{reward: message}]}``; ``score`` comes first because UniRL's client reduces a
reward's sub-metrics to the first one by default.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cigeval.serve.inputs import ItemProblem, PreparedItem, decode_b64_image, sample_of
from cigeval.serve.models import ScoreResponse
from cigeval.serve.settings import ServeConfig


class HistoryTurn(BaseModel):
    """One turn: its text and its image (base64)."""

    model_config = ConfigDict(extra="ignore")

    text: str = ""
    image_b64: str | None = None
    video_b64: str | None = None


class UniRLRequest(BaseModel):
    """One sample of UniRL's ``/score`` body."""

    model_config = ConfigDict(extra="ignore")

    history: list[HistoryTurn] = Field(min_length=1)
    required_rewards: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None


class UniRLBody(BaseModel):
    """UniRL's ``POST /score`` body."""

    model_config = ConfigDict(extra="ignore")

    requests: list[UniRLRequest]


def prepare_unirl(request: UniRLRequest, index: int, settings: ServeConfig) -> PreparedItem:
    """The sample of one UniRL request, or why it has none."""
    metadata = request.metadata or {}
    group = metadata.get("group")
    group = str(group) if group is not None else None
    turns = request.history
    try:
        if any(t.video_b64 for t in turns):
            raise ItemProblem("videos are not judged by this service (images only)")
        if len(turns) > 2:
            raise ItemProblem(f"{len(turns)} history turns: 1 (T2I) or 2 (editing) expected")
        if any(t.image_b64 is None for t in turns):
            raise ItemProblem("a history turn without image_b64")
        last = decode_b64_image(turns[-1].image_b64 or "", settings, "image")
        source = (
            decode_b64_image(turns[0].image_b64 or "", settings, "source image")
            if len(turns) == 2
            else None
        )
    except ItemProblem as exc:
        return PreparedItem(index, str(index), group, None, str(exc))
    return sample_of(index, turns[-1].text, last, settings, source=source, group=group)


def unirl_answer(body: UniRLBody, response: ScoreResponse, settings: ServeConfig) -> dict[str, Any]:
    """UniRL's ``{"results": [...], "errors": [...]}`` for ``response`` (same order)."""
    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for request, item in zip(body.requests, response.results, strict=True):
        wanted = request.required_rewards or [settings.reward_name]
        result: dict[str, Any] = {}
        error: dict[str, str] = {}
        for name in wanted:
            if name != settings.reward_name:
                error[name] = (
                    f"unknown reward {name!r}; this server serves {settings.reward_name!r}"
                )
            elif item.status != "ok" or item.score is None:
                error[name] = f"{item.status}: {item.error or 'no score'}"
            else:
                metrics = {"score": item.score}
                metrics.update(
                    {s.question_id: s.score for s in item.sub_scores if s.score is not None}
                )
                result[name] = metrics
        results.append(result)
        errors.append(error)
    # "stats" is ours (UniRL's client reads only results and errors): the tie statistics of
    # the groups named in metadata["group"].
    return {"results": results, "errors": errors, "stats": response.stats.model_dump()}
