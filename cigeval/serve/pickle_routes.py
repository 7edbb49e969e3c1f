"""The answers of ``POST /``: the pickle bodies of Flow-GRPO's remote scorer and of
EditScore's reward client (only with ``--accept-pickle``), told apart by their keys.

**Flow-GRPO** (``flow_grpo/rewards.py``, ``unifiedreward_score_remote``): ``{"images": [JPEG
bytes], "prompts": [...]}`` → ``{"outputs": [reward, ...]}``, plus ``status``, ``errors``,
``component_rewards`` (each sub-question's scores, NaN where an item has none) and, with
``--reasoning``, ``reasoning``.

**EditScore** (``examples/OmniGen2-RL``: ``RewardClient.evaluate``): ``{"input_images": [[PIL
image or bytes, ...] per sample], "output_image": [PIL image or bytes], "meta_datas": [JSON
text or dict with "instruction"], "server_type": ...}`` → ``{"scores", "rewards",
"reasoning", "strict_rewards", "meta_data"}`` as its proxy answers them (``rewards`` in
[0, 1]; ``scores`` 1.0 where the reward is at least 0.5, else 0.0, as its server gives them),
plus ``component_rewards``, ``status`` and ``errors``.

An item without a score gets NaN (``--fill-unscored nan``) or its fill-in; a batch in which
no item was scored has nothing a fill-in could come from, and under a fill mode it is a 503
with Retry-After (the clients retry, as after a judge outage), never NaN.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.serve.body import Refused
from cigeval.serve.inputs import (
    ItemProblem,
    PreparedItem,
    group_key,
    identity,
    named_group,
    sample_of,
)
from cigeval.serve.models import ItemResult, ScoreResponse
from cigeval.serve.pickle_body import (
    PickledImage,
    UnsafePickle,
    load_flow_grpo_body,
    load_pickle,
)
from cigeval.serve.settings import ServeConfig


@dataclass(frozen=True)
class PickleBatch:
    """The items of a pickle body, which protocol sent it and what each item carried."""

    protocol: str  # "flow_grpo" or "editscore"
    items: list[PreparedItem]
    metadata: list[dict[str, Any]]


def image_input(value: Any, what: str) -> Any:
    """Image file bytes or a PIL image from a pickle (an ItemProblem when neither)."""
    if isinstance(value, PickledImage):
        if value.image is None:
            raise ItemProblem(f"{what}: {value.problem}")
        return value.image
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise ItemProblem(
        f"{what}: expected image file bytes or a PIL image, got {type(value).__name__}"
    )


def read_pickle_batch(body: bytes, settings: ServeConfig) -> tuple[str, list[Any]]:
    """Which protocol sent the pickled ``body``, and its entries (one per item), before they
    are prepared; a 400 :class:`Refused` for a refused pickle or a body neither sends."""
    try:
        data = load_pickle(body, settings.max_pixels)
    except UnsafePickle as exc:
        raise Refused(400, str(exc)) from None
    if isinstance(data, dict) and "output_image" in data:
        return "editscore", _editscore_entries(data)
    if isinstance(data, dict) and "images" in data:
        try:
            images, prompts = load_flow_grpo_body(data)
        except UnsafePickle as exc:
            raise Refused(400, str(exc)) from None
        return "flow_grpo", list(zip(images, prompts, strict=True))
    raise Refused(
        400,
        "the pickle must be Flow-GRPO's {'images', 'prompts'} or EditScore's "
        "{'input_images', 'output_image', 'meta_datas'}",
    )


def _editscore_entries(data: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    outputs = data["output_image"]
    metas = data.get("meta_datas", data.get("meta_data"))
    sources = data.get("input_images")
    if not isinstance(outputs, list | tuple):
        raise Refused(400, "'output_image' must be a list (one image per sample)")
    if not isinstance(metas, list | tuple) or len(metas) != len(outputs):
        raise Refused(400, "'meta_datas' must be a list with one entry per output image")
    if sources is None:
        sources = [None] * len(outputs)
    if not isinstance(sources, list | tuple) or len(sources) != len(outputs):
        raise Refused(400, "'input_images' must be a list with one entry per output image")
    return list(zip(sources, outputs, metas, strict=True))


def prepare_pickle_batch(protocol: str, entries: list[Any], settings: ServeConfig) -> PickleBatch:
    """Each entry as a prepared item (its problem, when it has one)."""
    items: list[PreparedItem] = []
    metadata: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        try:
            item, meta = _entry_item(protocol, index, entry, settings)
        except Exception as exc:  # whatever one entry raises is its own problem
            problem = f"{type(exc).__name__}: {exc}"
            item, meta = PreparedItem(index, str(index), None, None, problem), {}
        items.append(item)
        metadata.append(meta)
    return PickleBatch(protocol, items, metadata)


def _entry_item(
    protocol: str, index: int, entry: Any, settings: ServeConfig
) -> tuple[PreparedItem, dict[str, Any]]:
    if protocol == "editscore":
        return _editscore_item(index, *entry, settings=settings)
    image, prompt = entry
    try:
        output = image_input(image, "image")
    except ItemProblem as exc:
        key = group_key(None, prompt)
        return PreparedItem(index, str(index), None, None, str(exc), key), {}
    return sample_of(index, prompt, output, settings), {}


def _meta(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str | bytes):
        try:
            loaded = json.loads(value)
        except ValueError:
            return {"prompt": value if isinstance(value, str) else value.decode("utf-8", "replace")}
        return loaded if isinstance(loaded, dict) else {"prompt": str(loaded)}
    return {}


def _editscore_item(
    index: int, sources: Any, output: Any, meta_value: Any, *, settings: ServeConfig
) -> tuple[PreparedItem, dict[str, Any]]:
    meta = _meta(meta_value)
    group = named_group(None, meta)
    instruction = meta.get("instruction", meta.get("prompt"))
    key = group_key(group, instruction if isinstance(instruction, str) else None, _sources(sources))
    try:
        if not isinstance(instruction, str) or not instruction.strip():
            raise ItemProblem("meta_datas entry has no 'instruction' (nor 'prompt') text")
        image = image_input(output, "output image")
        if sources is None or (isinstance(sources, list | tuple) and not sources):
            source = None  # no input image: judged as text-to-image
        else:
            listed = list(sources) if isinstance(sources, list | tuple) else [sources]
            if len(listed) != 1:
                raise ItemProblem(
                    f"{len(listed)} input images; an edit is judged against one source image"
                )
            source = image_input(listed[0], "input image")
    except ItemProblem as exc:
        return PreparedItem(index, str(index), group, None, str(exc), key), meta
    item = sample_of(index, instruction, image, settings, source=source, group=group, key=key)
    return item, meta


def _sources(sources: Any) -> list[bytes | str] | None:
    """What tells an edit's source images apart, for its group (None: no source)."""
    listed = sources if isinstance(sources, list | tuple) else [sources]
    found: list[bytes | str] = []
    for value in listed:
        if isinstance(value, PickledImage):
            value = value.image if value.image is not None else value.problem
        if value is None:
            continue
        found.append(value if isinstance(value, str) else identity(value))
    return found or None


def _reward(item: ItemResult) -> float:
    return item.reward if item.reward is not None else math.nan


def _components(results: list[ItemResult]) -> dict[str, list[float]]:
    names = list(dict.fromkeys(s.question_id for r in results for s in r.sub_scores))
    table: dict[str, list[float]] = {}
    for name in names:
        column = []
        for result in results:
            found = next((s.score for s in result.sub_scores if s.question_id == name), None)
            column.append(float(found) if found is not None else math.nan)
        table[name] = column
    return table


def _reasoning(item: ItemResult) -> str:
    if item.status != "ok":
        return f"{item.status}: {item.error or 'no score'}"
    return "\n".join(f"{s.question_id}: {s.score}\n{s.reasoning or ''}" for s in item.sub_scores)


def pickle_answer(
    batch: PickleBatch, response: ScoreResponse, settings: ServeConfig
) -> dict[str, Any]:
    """The answer of ``batch``'s protocol (a 503 :class:`Refused` when fill-ins were asked
    for and no item of the batch was scored)."""
    results = response.results
    unfilled = [r for r in results if r.reward is None]
    if unfilled and settings.fill_unscored != "nan":
        first = next((r.error for r in unfilled if r.error), "no score")
        fill = settings.fill_unscored
        raise Refused(
            503,
            f"no item of this batch of {len(results)} was scored, so "
            f"{in_callers_words(f'--fill-unscored {fill}', f'fill_unscored={fill!r}')} "
            f"has nothing to fill in from (first error: {first})",
            {"Retry-After": str(settings.retry_after_s)},
        )
    common = {
        "status": [r.status for r in results],
        "errors": [r.error for r in results],
        "component_rewards": _components(results),
    }
    if batch.protocol == "flow_grpo":
        answer: dict[str, Any] = {"outputs": [_reward(r) for r in results], **common}
        if settings.reasoning:
            answer["reasoning"] = [_reasoning(r) for r in results]
        return answer
    rewards = [_reward(r) for r in results]
    meta_data = []
    for meta, result in zip(batch.metadata, results, strict=True):
        meta = {**meta, "original_index": result.index}
        if result.error is not None:
            meta["error"] = result.error
        meta_data.append(meta)
    return {
        "scores": [(1.0 if r >= 0.5 else 0.0) if not math.isnan(r) else math.nan for r in rewards],
        "rewards": rewards,
        "strict_rewards": rewards,
        "reasoning": [_reasoning(r) for r in results],
        "meta_data": meta_data,
        **common,
    }


__all__ = [
    "PickleBatch",
    "image_input",
    "pickle_answer",
    "prepare_pickle_batch",
    "read_pickle_batch",
]
