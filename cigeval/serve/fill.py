"""``--fill-unscored``: the reward of an item the judge gave no score, for trainers whose
client cannot take a NaN (one NaN in a GRPO group makes every advantage of the group NaN).

- ``nan`` (the default): no reward; the item's status and error say why.
- ``group-mean``: the mean score of the item's group in the same batch (a group: the one the
  client named, else the prompt and its condition images); where the group has no score,
  the mean of the batch. A constant within a group leaves the other samples' advantages as
  they are; the fill-in is never a silent 0.
- a number: that value.

Each filled item says so (``filled``), and the batch counts them (``stats.filled``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from cigeval.serve.models import ItemResult
from cigeval.serve.settings import ServeConfig


def fill_rewards(
    results: Sequence[ItemResult], keys: Sequence[str | None], settings: ServeConfig
) -> int:
    """Set each result's ``reward`` (its score, or the fill-in); the number filled in."""
    rewards = filled_values([r.score for r in results], keys, settings.fill_unscored)
    count = 0
    for result, reward in zip(results, rewards, strict=True):
        result.reward = reward
        if result.score is None and reward is not None:
            result.filled = True
            count += 1
    return count


def filled_values(
    scores: Sequence[float | None], keys: Sequence[str | None], mode: str
) -> list[float | None]:
    """``scores`` with each None filled in under ``mode`` (``nan``, ``group-mean`` or a
    number, as :class:`~cigeval.serve.settings.ServeConfig` checks it); a None stays where
    nothing could be filled in (``nan``, or a batch without a single score)."""
    out = list(scores)
    missing = [i for i, s in enumerate(scores) if s is None]
    if not missing or mode == "nan":
        return out
    if mode != "group-mean":
        for index in missing:
            out[index] = float(mode)
        return out
    by_group: dict[str, list[float]] = {}
    scored: list[float] = []
    for score, key in zip(scores, keys, strict=True):
        if score is not None:
            scored.append(score)
            if key is not None:
                by_group.setdefault(key, []).append(score)
    if not scored:
        return out  # nothing in the batch to take a mean of: the rewards stay unknown
    batch_mean = statistics.fmean(scored)
    for index in missing:
        key = keys[index]
        same = by_group.get(key) if key is not None else None
        out[index] = statistics.fmean(same) if same else batch_mean
    return out
