"""Reward functions a training script imports, against a server or in-process, each with the
call its trainer makes (read from the trainers' sources; docs/serve.md has the recipes).

- :class:`FlowGRPOReward`: Flow-GRPO's ``reward_fn(images, prompts, metadata,
  only_strict=True) -> (rewards by name, info)``, and an entry of its ``multi_score`` table.
- :func:`verl_compute_score`, :func:`verl_compute_score_async`,
  :func:`verl_batch_compute_score`: verl's and verl-omni's ``compute_score``.

Each gives one float per image. An image the judge could not score is NaN unless the scorer
fills it in (``ImageScorer(fill_unscored=...)``); the errors say why.
"""

from __future__ import annotations

from cigeval.serve.adapters.batcher import Batcher
from cigeval.serve.adapters.flow_grpo import FlowGRPOReward
from cigeval.serve.adapters.images import batch_images, one_image
from cigeval.serve.adapters.scorer import ImageScorer, Judged, NoScores, Pair
from cigeval.serve.adapters.verl import (
    VerlReward,
    verl_batch_compute_score,
    verl_compute_score,
    verl_compute_score_async,
)

__all__ = [
    "Batcher",
    "FlowGRPOReward",
    "ImageScorer",
    "Judged",
    "NoScores",
    "Pair",
    "VerlReward",
    "batch_images",
    "one_image",
    "verl_batch_compute_score",
    "verl_compute_score",
    "verl_compute_score_async",
]
