"""UniRL's reward-service wire format, so its client (``unirl.reward.remote``) works unchanged.

Request: ``{"requests": [{"history": [{"text", "image_b64"}, ...], "required_rewards": [...],
"metadata": {...}}]}``. One history turn is a T2I sample (prompt, image); two turns are an edit
(``history[0]`` the instruction and source, ``history[1]`` the instruction and edited image).
Response, one entry per request: ``{"results": [{reward: {"score": x, <sub-question>: y}}],
"errors": [{reward: message}]}``; ``score`` comes first because UniRL's client reduces a
reward's sub-metrics to the first one by default, and every value is a finite number (its
client fails a sample on any other). ``stats`` (ours) and, with ``--reasoning``, a
``reasoning`` list (one entry per request) sit beside them; UniRL's client reads neither.

UniRL sends no group ids: a request's group is ``metadata["group"]`` when a dataset puts one
there, else its prompt and source image, so the N samples of one prompt form one group.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cigeval._caller import in_callers_words
from cigeval._validation_text import validation_problems
from cigeval.serve.inputs import (
    ItemProblem,
    PreparedItem,
    decode_b64_image,
    group_key,
    named_group,
    sample_of,
)
from cigeval.serve.models import ItemResult, ScoreResponse
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


def parse_requests(data: Any) -> list[Any]:
    """The ``requests`` list of a parsed body (a 422 :class:`Refused` when there is none)."""
    from cigeval.serve.body import Refused

    if not isinstance(data, dict) or not isinstance(data.get("requests"), list):
        raise Refused(422, "invalid request body: expected {'requests': [...]} (UniRL's format)")
    return list(data["requests"])


def prepare_unirl_raw(
    raw: Any, index: int, settings: ServeConfig
) -> tuple[PreparedItem, list[str]]:
    """The sample of one UniRL request and the rewards it asks for (a request that does not
    fit the schema is its own problem)."""
    from pydantic import ValidationError

    try:
        request = UniRLRequest.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc, "request")
        wanted = raw.get("required_rewards") if isinstance(raw, dict) else None
        names = [str(w) for w in wanted] if isinstance(wanted, list) else []
        return PreparedItem(index, str(index), None, None, f"invalid request: {problems}"), names
    return prepare_unirl(request, index, settings), request.required_rewards


def prepare_unirl(request: UniRLRequest, index: int, settings: ServeConfig) -> PreparedItem:
    """The sample of one UniRL request, or why it has none."""
    group = named_group(None, request.metadata)
    turns = request.history
    source_b64 = turns[0].image_b64 if len(turns) == 2 else None
    key = group_key(group, turns[-1].text, [source_b64] if source_b64 else None)
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
        return PreparedItem(index, str(index), group, None, str(exc), key)
    except Exception as exc:  # whatever else one request raises is its own problem
        problem = f"{type(exc).__name__}: {exc}"
        return PreparedItem(index, str(index), group, None, problem, key)
    return sample_of(index, turns[-1].text, last, settings, source=source, group=group, key=key)


def _metrics(item: ItemResult) -> dict[str, float]:
    assert item.reward is not None
    metrics = {"score": item.reward}
    if not item.filled:  # a fill-in has no sub-scores
        metrics.update({s.question_id: s.score for s in item.sub_scores if s.score is not None})
    return metrics


def unirl_answer(
    wanted: list[list[str]], response: ScoreResponse, settings: ServeConfig
) -> dict[str, Any]:
    """UniRL's ``{"results": [...], "errors": [...]}`` for ``response``; ``wanted`` holds
    each request's ``required_rewards`` (same order)."""
    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for names, item in zip(wanted, response.results, strict=True):
        result: dict[str, Any] = {}
        error: dict[str, str] = {}
        for name in names or [settings.reward_name]:
            if name != settings.reward_name:
                error[name] = (
                    f"unknown reward {name!r}; this server serves {settings.reward_name!r}"
                )
                continue
            if item.reward is not None:
                result[name] = _metrics(item)
            if item.status != "ok":
                filled = (
                    f" (reward filled in by {in_callers_words('--fill-unscored', 'fill_unscored')})"
                    if item.filled
                    else ""
                )
                error[name] = f"{item.status}: {item.error or 'no score'}{filled}"
        results.append(result)
        errors.append(error)
    answer: dict[str, Any] = {
        "results": results,
        "errors": errors,
        "stats": response.stats.model_dump(),
    }
    if settings.reasoning:
        answer["reasoning"] = [
            {s.question_id: s.reasoning or "" for s in item.sub_scores} for item in response.results
        ]
    return answer
