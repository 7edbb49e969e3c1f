"""Within-prompt win/tie/loss agreement, and the tie band that makes a judge say "tie" about
as often, and where, people do.

Two images of one prompt make a pair. People prefer one (their mean scores differ) or tie
(equal means); the judge prefers one when its two values differ by more than the band, else
ties. The agreement is the share of pairs where both say the same (win, tie or loss).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Two human means closer than this are equal (they are averages of a few ratings).
HUMAN_TIE = 1e-9
#: Quantiles of the within-prompt differences tried as bands (with 0, the stock behaviour).
BAND_QUANTILES = tuple(round(q, 2) for q in np.arange(0.05, 0.96, 0.05))


def prompt_pairs(groups: Sequence[Any], cells: Sequence[Any] | None = None) -> np.ndarray:
    """Index pairs (m x 2) of items of one prompt group (of different cells when given)."""
    names = np.asarray([str(g) for g in groups])
    order = np.argsort(names, kind="stable")
    pairs = []
    start = 0
    for end in range(1, len(order) + 1):
        if end == len(order) or names[order[end]] != names[order[start]]:
            members = order[start:end]
            for a in range(len(members)):
                for b in range(a + 1, len(members)):
                    i, k = members[a], members[b]
                    if cells is None or cells[i] != cells[k]:
                        pairs.append((i, k))
            start = end
    return np.asarray(pairs, dtype=int).reshape(-1, 2)


def outcome(difference: np.ndarray, band: float) -> np.ndarray:
    """-1, 0 or 1 for each difference: a tie within ``band``, else its sign."""
    return np.where(np.abs(difference) <= band + 1e-12, 0, np.sign(difference))


def agreement(
    human: np.ndarray, values: np.ndarray, pairs: np.ndarray, band: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """For each pair: whether the judge's win/tie/loss matches people's, and whether the pair
    counts (both values present)."""
    if not len(pairs):
        return np.zeros(0, bool), np.zeros(0, bool)
    a, b = pairs[:, 0], pairs[:, 1]
    counts = ~np.isnan(values[a]) & ~np.isnan(values[b]) & ~np.isnan(human[a]) & ~np.isnan(human[b])
    people = outcome(human[a] - human[b], HUMAN_TIE)
    judge = outcome(values[a] - values[b], band)
    return (people == judge) & counts, counts


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
    candidates = sorted({0.0, *(float(np.quantile(diffs, q)) for q in BAND_QUANTILES)})
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
