"""The scorer every adapter shares: (prompt, image[, source image]) pairs in, one reward per
image out, from a running ``cigeval serve`` (``url=``) or in-process (``evaluator=``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cigeval.serve.adapters.batcher import Batcher
from cigeval.serve.adapters.images import file_bytes, one_image
from cigeval.serve.client import ScoreClient, b64
from cigeval.serve.fill import filled_values
from cigeval.serve.inputs import group_key, identity
from cigeval.serve.settings import ServeConfig


@dataclass(frozen=True)
class Pair:
    """One image to judge: its prompt (the instruction of an edit), the image (a PIL image
    or file bytes), the source image of an edit, and its GRPO group when the caller knows
    it (else the prompt and source make the group)."""

    prompt: str
    image: Any
    source: Any = None
    group: str | None = None


@dataclass(frozen=True)
class Judged:
    """What the judge made of one image: its score (None: none given), the reward (the score,
    or its fill-in), each sub-question's score (the component rewards), the reasoning when
    asked for, and why there is no score."""

    score: float | None
    reward: float | None
    components: dict[str, float] = field(default_factory=dict)
    reasoning: dict[str, str] | None = None
    error: str | None = None


class NoScores(RuntimeError):
    """No image of a batch was scored, so a fill-in (``fill_unscored``) has nothing to come
    from: raised rather than returning NaN to a trainer that asked for no NaN."""


class ImageScorer:
    """Scores (prompt, image) pairs: over HTTP when ``url`` is given, else in-process with
    ``evaluator`` (a :class:`cigeval.Evaluator`). ``task`` is the T2I task; pairs with a
    source image are edits judged under ``edit_task``.

    ``fill_unscored`` is what an image without a score gets (``nan``, ``group-mean`` or a
    number: see ``--fill-unscored`` in docs/serve.md), applied over each call's images;
    ``reasoning`` asks for the judge's reasoning. Calls of more than ``max_batch`` images go
    in several requests.
    """

    def __init__(
        self,
        *,
        url: str | None = None,
        api_key: str | None = None,
        evaluator: Any = None,
        task: str = "text_guided_ig",
        edit_task: str = "text_guided_ie",
        timeout_s: float = 300.0,
        fill_unscored: str = "nan",
        reasoning: bool = False,
        max_batch: int = 256,
    ) -> None:
        if (url is None) == (evaluator is None):
            raise ValueError("give either url= (a running cigeval serve) or evaluator=")
        self.client = ScoreClient(url, api_key=api_key, timeout_s=timeout_s) if url else None
        self.evaluator = evaluator
        self.task, self.edit_task = task, edit_task
        self.fill_unscored = ServeConfig(fill_unscored=fill_unscored).fill_unscored
        self.reasoning = reasoning
        self.max_batch = max_batch
        self._batcher: Batcher[Pair, Judged] | None = None
        #: Why each image of the last call has no score (None where it has one).
        self.last_errors: list[str | None] = []

    def judge(self, pairs: Sequence[Pair]) -> list[Judged]:
        """What the judge made of each pair, fill-ins applied over ``pairs``."""
        pairs = [Pair(p.prompt, one_image(p.image), _maybe(p.source), p.group) for p in pairs]
        found: list[Judged] = []
        for start in range(0, len(pairs), self.max_batch):
            chunk = pairs[start : start + self.max_batch]
            found += self._http(chunk) if self.client is not None else self._local(chunk)
        keys = [_group_of(p) for p in pairs]
        rewards = filled_values([j.score for j in found], keys, self.fill_unscored)
        judged = [
            Judged(j.score, r, j.components, j.reasoning, j.error)
            for j, r in zip(found, rewards, strict=True)
        ]
        self.last_errors = [j.error for j in judged]
        return judged

    def score(
        self,
        prompts: Sequence[Any],
        images: Any,
        sources: Sequence[Any] | None = None,
        groups: Sequence[str | None] | None = None,
    ) -> list[float]:
        """One reward per image (NaN where none, under ``fill_unscored="nan"``)."""
        from cigeval.serve.adapters.images import batch_images

        outputs = batch_images(images)
        if len(prompts) != len(outputs):
            raise ValueError(f"{len(outputs)} image(s) but {len(prompts)} prompt(s)")
        pairs = [
            Pair(
                str(prompt),
                image,
                sources[i] if sources is not None else None,
                groups[i] if groups is not None else None,
            )
            for i, (prompt, image) in enumerate(zip(prompts, outputs, strict=True))
        ]
        return rewards_of(self.judge(pairs), self.fill_unscored)

    def batcher(self, window_s: float = 0.05) -> Batcher[Pair, Judged]:
        """The scorer's :class:`Batcher`: pairs from concurrent callers judged together."""
        if self._batcher is None:
            self._batcher = Batcher(self.judge, window_s=window_s, max_items=self.max_batch)
        return self._batcher

    def _item(self, index: int, pair: Pair) -> dict[str, Any]:
        if pair.source is None:
            item: dict[str, Any] = {"task": self.task, "prompt": pair.prompt}
            images = {"output": pair.image}
        else:
            item = {"task": self.edit_task, "instruction": pair.prompt}
            images = {"source": pair.source, "output": pair.image}
        return {"id": str(index), **item, "images": images}

    def _http(self, pairs: Sequence[Pair]) -> list[Judged]:
        assert self.client is not None
        items = []
        for index, pair in enumerate(pairs):
            item = self._item(index, pair)
            item["images"] = {r: b64(file_bytes(i)) for r, i in item["images"].items()}
            if pair.group is not None:
                item["group"] = pair.group
            items.append(item)
        answer = self.client.score(items, reasoning=self.reasoning)
        return [
            Judged(
                score=result["score"],
                reward=result["score"],
                components={
                    s["question_id"]: float(s["score"])
                    for s in result.get("sub_scores", [])
                    if s.get("score") is not None
                },
                reasoning=(
                    {s["question_id"]: s.get("reasoning") or "" for s in result["sub_scores"]}
                    if self.reasoning
                    else None
                ),
                error=result.get("error"),
            )
            for result in answer["results"]
        ]

    def _local(self, pairs: Sequence[Pair]) -> list[Judged]:
        scores = self.evaluator.evaluate_many([self._item(i, p) for i, p in enumerate(pairs)])
        return [
            Judged(
                score=float(s.value) if s.status == "ok" and s.value is not None else None,
                reward=None,
                components={
                    q.question_id: float(q.score) for q in s.sub_scores if q.score is not None
                },
                reasoning=(
                    {q.question_id: q.reasoning or "" for q in s.sub_scores}
                    if self.reasoning
                    else None
                ),
                error=s.error,
            )
            for s in scores
        ]


def rewards_of(judged: Sequence[Judged], fill_unscored: str) -> list[float]:
    """The rewards as floats: NaN where there is none under ``nan``; under a fill mode a
    batch with nothing to fill in from is :class:`NoScores`, never NaN."""
    if fill_unscored != "nan" and any(j.reward is None for j in judged):
        first = next((j.error for j in judged if j.error), "no score")
        raise NoScores(
            f"no image of this batch of {len(judged)} was scored, so fill_unscored="
            f"{fill_unscored!r} has nothing to fill in from (first error: {first})"
        )
    return [j.reward if j.reward is not None else math.nan for j in judged]


def _maybe(image: Any) -> Any:
    return None if image is None else one_image(image, "source image")


def _group_of(pair: Pair) -> str | None:
    source = pair.source
    if source is None:
        return group_key(pair.group, pair.prompt)
    return group_key(pair.group, pair.prompt, [identity(source)])
