"""verl's and verl-omni's ``compute_score`` (``reward.custom_reward_function``).

verl-omni's visual reward manager calls, per sample, ``compute_score(data_source=...,
solution_image=<uint8 CHW tensor>, ground_truth=..., extra_info={...})`` and awaits it when it
is a coroutine function, else runs it in a worker thread; its samples are scored
concurrently. verl's own reward managers call ``compute_score(data_source=...,
solution_str=..., ground_truth=..., extra_info=...)`` per sample, and its batch manager
``compute_score(data_sources=[...], solution_strs=[...], ground_truths=[...],
extra_infos=[...], **reward_kwargs)`` once per batch. Each may return a float, or a dict with
``"score"`` whose other keys become logged extra info (the same keys for every sample).

The image is ``solution_image``, else ``extra_info["image"]`` (or the last of
``extra_info["images"]``): a tensor, a PIL image, file bytes, ``{"bytes": ...}`` or a path.
The prompt is ``extra_info["prompt"]``, else ``extra_info["raw_prompt"]``, else
``ground_truth`` (verl-omni's datasets put the caption there). An edit's source image is
``extra_info["source_image"]``. The per-sample forms gather concurrent calls into one batch
(:class:`~cigeval.serve.adapters.batcher.Batcher`), so 64 concurrent samples make one
request, not 64 round trips.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cigeval.serve.adapters.scorer import ImageScorer, Judged, NoScores, Pair, rewards_of
from cigeval.serve.inputs import named_group


def _pair(solution_image: Any, ground_truth: Any, extra_info: Any) -> Pair:
    extra = extra_info if isinstance(extra_info, dict) else {}
    image = solution_image
    if image is None:
        image = extra.get("image")
    if image is None and extra.get("images") is not None:
        listed = list(extra["images"])
        image = listed[-1] if listed else None
    if image is None:
        raise ValueError(
            "verl compute_score: no image (pass solution_image=, or put it in extra_info['image'])"
        )
    prompt = extra.get("prompt", extra.get("raw_prompt", ground_truth))
    if isinstance(prompt, list):  # a chat prompt: the text of its messages
        prompt = " ".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    return Pair(
        "" if prompt is None else str(prompt),
        image,
        extra.get("source_image"),
        named_group(None, extra),
    )


class VerlReward:
    """verl's reward function in its three call forms, over one :class:`ImageScorer`.

    ``components=True`` returns ``{"score": reward, "<question>": score, ...}`` (NaN where a
    sample has no such sub-score) instead of a float.
    """

    def __init__(
        self, scorer: ImageScorer, *, components: bool = False, window_s: float = 0.05
    ) -> None:
        self.scorer = scorer
        self.components = components
        self.window_s = window_s

    def _result(self, judged: Judged, reward: float) -> float | dict[str, float]:
        if not self.components:
            return reward
        names = [q.id for q in _questions(self.scorer)]
        return {"score": reward, **{n: judged.components.get(n, math.nan) for n in names}}

    def _outcome(self, judged: Judged) -> float | dict[str, float]:
        reward = rewards_of([judged], self.scorer.fill_unscored)[0]
        return self._result(judged, reward)

    def compute_score(
        self,
        data_source: Any = None,
        solution_str: Any = None,
        ground_truth: Any = None,
        extra_info: Any = None,
        *,
        solution_image: Any = None,
        **_: Any,
    ) -> float | dict[str, float]:
        """The per-sample form (sync): concurrent calls from worker threads are batched."""
        pair = _pair(solution_image, ground_truth, extra_info)
        return self._outcome(self.scorer.batcher(self.window_s).submit(pair).result())

    async def compute_score_async(
        self,
        data_source: Any = None,
        solution_str: Any = None,
        ground_truth: Any = None,
        extra_info: Any = None,
        *,
        solution_image: Any = None,
        **_: Any,
    ) -> float | dict[str, float]:
        """The per-sample form (a coroutine): concurrent calls are batched."""
        pair = _pair(solution_image, ground_truth, extra_info)
        future = self.scorer.batcher(self.window_s).submit(pair)
        return self._outcome(await asyncio.wrap_future(future))

    def compute_score_batch(
        self,
        data_sources: Sequence[Any] | None = None,
        solution_strs: Sequence[Any] | None = None,
        ground_truths: Sequence[Any] | None = None,
        extra_infos: Sequence[Any] | None = None,
        *,
        solution_images: Sequence[Any] | None = None,
        **_: Any,
    ) -> list[float | dict[str, float]]:
        """The batch form (verl's batch reward manager): one result per sample."""
        count = len(extra_infos if extra_infos is not None else (ground_truths or []))
        extras = list(extra_infos) if extra_infos is not None else [None] * count
        truths = list(ground_truths) if ground_truths is not None else [None] * count
        images = list(solution_images) if solution_images is not None else [None] * count
        pairs = [_pair(images[i], truths[i], extras[i]) for i in range(count)]
        judged = self.scorer.judge(pairs)
        rewards = rewards_of(judged, self.scorer.fill_unscored)
        return [self._result(j, r) for j, r in zip(judged, rewards, strict=True)]


def _questions(scorer: ImageScorer) -> list[Any]:
    from cigeval.tasks.registry import get_task

    return list(get_task(scorer.task).sub_questions)


def verl_compute_score(scorer: ImageScorer, **options: Any) -> Callable[..., Any]:
    """verl's per-sample ``compute_score`` (sync; verl runs it in worker threads)."""
    reward = VerlReward(scorer, **options)

    def compute_score(*args: Any, **kwargs: Any) -> float | dict[str, float]:
        return reward.compute_score(*args, **kwargs)

    return compute_score


def verl_compute_score_async(scorer: ImageScorer, **options: Any) -> Callable[..., Awaitable[Any]]:
    """verl's per-sample ``compute_score`` as a coroutine function (awaited by the reward
    loop; concurrent samples batched)."""
    reward = VerlReward(scorer, **options)

    async def compute_score(*args: Any, **kwargs: Any) -> float | dict[str, float]:
        return await reward.compute_score_async(*args, **kwargs)

    return compute_score


def verl_batch_compute_score(scorer: ImageScorer, **options: Any) -> Callable[..., Any]:
    """The ``compute_score`` of verl's batch reward manager (lists in, one result per
    sample out)."""
    return VerlReward(scorer, **options).compute_score_batch


__all__ = [
    "NoScores",
    "VerlReward",
    "verl_batch_compute_score",
    "verl_compute_score",
    "verl_compute_score_async",
]
