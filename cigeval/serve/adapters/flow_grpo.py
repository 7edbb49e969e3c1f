"""Flow-GRPO's reward functions (``flow_grpo/rewards.py``, ``scripts/train_sd3.py``).

Its trainer calls ``reward_fn(images, prompts, prompt_metadata, only_strict=True)`` (and
``only_strict=False`` when it evaluates) in a worker thread, reads ``rewards, info =
future.result()`` and turns every value of the ``rewards`` dict into a tensor; ``rewards["avg"]``
makes the advantages, grouped by prompt. ``multi_score(device, score_dict)`` builds that
function from entries of its ``score_functions`` table: ``entry(device)`` (when the entry names
a ``device`` argument) returns ``fn(images, prompts, metadata) -> (scores, info)``.
:class:`FlowGRPOReward` is both: the trainer's ``reward_fn`` itself, and, through
:meth:`FlowGRPOReward.multi_score_entry`, an entry of that table beside its other rewards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cigeval.serve.adapters.images import batch_images
from cigeval.serve.adapters.scorer import ImageScorer, Pair, rewards_of
from cigeval.serve.inputs import named_group


class FlowGRPOReward:
    """Flow-GRPO's reward: ``rewards, info = reward(images, prompts, metadata,
    only_strict=True)``.

    ``images``: the pipeline's float NCHW tensor in [0, 1], a uint8 NHWC array or PIL images.
    ``metadata`` (one dict per image, as its datasets give them) may name a ``group`` or hold
    the ``source`` image of an edit. ``rewards`` holds ``name`` and ``"avg"`` (the same
    rewards: Flow-GRPO's advantages read ``"avg"``), and with ``components`` each
    sub-question's scores as ``"<name>_<question>"`` (NaN where an image has none; Flow-GRPO
    only logs them). ``info`` holds the errors (None where scored). Keywords the trainer
    passes that concern other rewards (``only_strict``: GenEval's) are accepted and ignored.
    """

    def __init__(
        self, scorer: ImageScorer, *, name: str = "cigeval", components: bool = False
    ) -> None:
        self.scorer = scorer
        self.name = name
        self.components = components

    def __call__(
        self, images: Any, prompts: Sequence[Any], metadata: Any = None, only_strict: bool = True,
        **_: Any,
    ) -> tuple[dict[str, list[float]], dict[str, Any]]:  # fmt: skip
        """The rewards by name, and the per-image errors."""
        judged = self._judged(images, prompts, metadata)
        rewards = rewards_of(judged, self.scorer.fill_unscored)
        table: dict[str, list[float]] = {self.name: rewards, "avg": list(rewards)}
        if self.components:
            names = list(dict.fromkeys(name for j in judged for name in j.components))
            for question in names:
                table[f"{self.name}_{question}"] = [
                    j.components.get(question, float("nan")) for j in judged
                ]
        return table, {"errors": [j.error for j in judged]}

    def score_fn(
        self, images: Any, prompts: Sequence[Any], metadata: Any = None
    ) -> tuple[list[float], dict[str, Any]]:
        """One entry's function in ``multi_score``: ``scores, info = fn(images, prompts,
        metadata)``."""
        judged = self._judged(images, prompts, metadata)
        return rewards_of(judged, self.scorer.fill_unscored), {"errors": [j.error for j in judged]}

    def multi_score_entry(self) -> Callable[..., Any]:
        """An entry of ``multi_score``'s ``score_functions`` table: ``entry(device)`` returns
        :meth:`score_fn` (``device`` is unused: the judge runs elsewhere)."""

        def cigeval_score(device: Any = None) -> Callable[..., Any]:
            del device
            return self.score_fn

        return cigeval_score

    def _judged(self, images: Any, prompts: Sequence[Any], metadata: Any) -> list[Any]:
        outputs = batch_images(images)
        prompts = [str(p) for p in prompts]
        if len(prompts) != len(outputs):
            raise ValueError(f"{len(outputs)} image(s) but {len(prompts)} prompt(s)")
        metas = list(metadata) if isinstance(metadata, list | tuple) else []
        metas += [{}] * (len(outputs) - len(metas))
        pairs = []
        for prompt, image, meta in zip(prompts, outputs, metas, strict=False):
            meta = meta if isinstance(meta, dict) else {}
            pairs.append(Pair(prompt, image, meta.get("source"), named_group(None, meta)))
        return self.scorer.judge(pairs)
