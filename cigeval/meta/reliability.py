"""Repeated-judgement reliability: how far a judge agrees with itself (or an ensemble's judges
with each other) on the same image.

Records of an ensemble (``--samples-per-model N``, or several ``--model``) keep every
judgement of each sub-question (``sub_scores[i].judgments``). Each judgement's image score is
the record's aggregate rule over the sub-questions (``min`` by default), on [0, 1]. Over the
images with k >= 2 judgements each:

- ``icc``: the one-way intraclass correlation ICC(1): the share of the score's variance that
  lies between images rather than between judgements of one image;
- ``spearman``: the mean Spearman correlation over pairs of judgements;
- ``exact``: the share of images whose k judgements are all equal.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cigeval.rules import AGGREGATE_RULES, aggregate
from cigeval.stats import correlation


@dataclass
class Reliability:
    """Agreement between the judgements recorded per image (see the module docstring)."""

    images: int
    judgements: int
    icc: float | None
    spearman: float | None
    exact: float | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "images": self.images,
            "judgements_per_image": self.judgements,
            "icc": self.icc,
            "spearman": self.spearman,
            "exact": self.exact,
        }

    def line(self) -> str:
        """One line for the table."""

        def shown(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.3f}"

        exact = "n/a" if self.exact is None else f"{self.exact:.0%}"
        return (
            f"repeated judgements: {self.judgements} per image on {self.images} images: "
            f"ICC(1) {shown(self.icc)}, mean pairwise Spearman {shown(self.spearman)}, "
            f"all equal on {exact}"
        )


def judgement_scores(record: Mapping[str, Any]) -> list[float] | None:
    """The image score of each judgement of a record (None without two or more)."""
    subs = [s for s in record.get("sub_scores") or [] if isinstance(s, Mapping)]
    lists = [s.get("judgments") for s in subs]
    if not subs or not all(isinstance(v, list) and len(v) >= 2 for v in lists):
        return None
    k = len(lists[0])  # type: ignore[arg-type]
    if any(len(v) != k for v in lists):  # type: ignore[arg-type]
        return None
    rule = str((record.get("config") or {}).get("aggregate") or "min")
    rule = rule if rule in AGGREGATE_RULES else "min"
    scores = []
    for j in range(k):
        values = []
        for sub, given in zip(subs, lists, strict=True):
            value = given[j]  # type: ignore[index]
            if not isinstance(value, int | float) or isinstance(value, bool):
                return None
            scale = sub.get("scale") or (0, 10)
            values.append(float(value) / float(scale[1] or 10))
        scores.append(aggregate(values, rule))
    return scores


def icc1(matrix: np.ndarray) -> float | None:
    """One-way random-effects ICC(1) of an images x judgements matrix (None when undefined)."""
    n, k = matrix.shape
    if n < 2 or k < 2:
        return None
    means = matrix.mean(axis=1)
    between = k * ((means - matrix.mean()) ** 2).sum() / (n - 1)
    within = ((matrix - means[:, None]) ** 2).sum() / (n * (k - 1))
    denominator = between + (k - 1) * within
    return None if denominator == 0 else float((between - within) / denominator)


def repeated_judgements(records: Iterable[Mapping[str, Any]]) -> Reliability | None:
    """The reliability of the ok records holding k >= 2 judgements (the most common k);
    None when no record holds several."""
    rows = [s for r in records if r.get("status") == "ok" and (s := judgement_scores(r))]
    if not rows:
        return None
    k = max({len(r) for r in rows}, key=lambda size: sum(len(r) == size for r in rows))
    matrix = np.asarray([r for r in rows if len(r) == k], dtype=float)
    pairs = [
        correlation(matrix[:, a], matrix[:, b]) for a, b in itertools.combinations(range(k), 2)
    ]
    defined = [p for p in pairs if not np.isnan(p)]
    exact = float(np.mean(np.ptp(matrix, axis=1) == 0))
    return Reliability(
        len(matrix),
        k,
        icc1(matrix),
        float(np.mean(defined)) if defined else None,
        exact,
    )
