"""Within-prompt win/tie/loss agreement, and the tie band that makes a judge say "tie" about
as often, and where, people do.

Two images of one prompt make a pair. People prefer one (their mean scores differ) or tie
(equal means); the judge prefers one when its two values differ by more than the band, else
ties. The agreement is the share of pairs where both say the same (win, tie or loss).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cigeval.meta.agreement import agreement, outcome, prompt_pairs

#: Quantiles of the within-prompt differences tried as bands (with 0, the stock behaviour).
BAND_QUANTILES = tuple(round(q, 2) for q in np.arange(0.05, 0.96, 0.05))

__all__ = [
    "BAND_QUANTILES",
    "agreement",
    "candidate_bands",
    "choose_band",
    "outcome",
    "prompt_pairs",
]


def candidate_bands(sizes: np.ndarray) -> list[float]:
    """The bands tried, smallest first: 0 and the :data:`BAND_QUANTILES` of ``sizes`` (the
    absolute differences of two scores)."""
    return sorted({0.0, *(float(np.quantile(sizes, q)) for q in BAND_QUANTILES)})


def choose_band(
    human: np.ndarray, values: np.ndarray, pairs: np.ndarray
) -> tuple[float, dict[str, Any]]:
    """The band with the best agreement on these pairs (the smallest among equals; 0 when
    there are no pairs), and what was tried."""
    if not len(pairs):
        return 0.0, {"pairs": 0}
    diffs = np.abs(values[pairs[:, 0]] - values[pairs[:, 1]])
    diffs = diffs[~np.isnan(diffs)]
    if not len(diffs):
        return 0.0, {"pairs": 0}
    candidates = candidate_bands(diffs)
    scores = []
    for band in candidates:
        agree, counts = agreement(human, values, pairs, band)
        scores.append(agree.sum() / max(counts.sum(), 1))
    best = int(np.argmax(scores))
    return candidates[best], {
        "pairs": len(diffs),
        "agreement_without": round(float(scores[0]), 4),
        "agreement_with": round(float(scores[best]), 4),
        "band": round(candidates[best], 4),
    }
