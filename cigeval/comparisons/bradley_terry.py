"""A Bradley–Terry ranking of three or more generators from their per-condition outcomes.

On every condition, every two generators that both answered it play one game: the higher
score wins, equal scores tie (half a win each). The Bradley–Terry model gives each generator
a strength s with P(i beats j) = 1 / (1 + exp(s_j - s_i)); the strengths are the maximum
likelihood fit, found with Hunter's minorise-maximise iteration (2004), which never leaves
the valid region and converges for a connected comparison graph. One virtual tie between
every two generators that met keeps the fit finite when one of them never lost. Intervals come
from refitting on bootstrap resamples of the conditions (all resamples fitted at once in
numpy). Strengths are reported relative to the baseline (its strength is 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cigeval.comparisons.paired import TIE_TOLERANCE

#: Iterations of the minorise-maximise loop at most, and its convergence threshold.
MAX_ITERATIONS = 5000
TOLERANCE = 1e-10
#: Bootstrap resamples fitted together (bounds the memory of one block).
_BLOCK = 200


@dataclass
class Strength:
    """One generator's Bradley–Terry strength relative to the baseline, with its interval."""

    generator: str
    rank: int
    strength: float
    low: float | None
    high: float | None
    games: int

    @property
    def p_beats_baseline(self) -> float:
        """The fitted probability of beating the baseline on a condition (ties aside)."""
        import math

        return 1.0 / (1.0 + math.exp(-self.strength))

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "generator": self.generator,
            "rank": self.rank,
            "strength": self.strength,
            "low": self.low,
            "high": self.high,
            "p_beats_baseline": self.p_beats_baseline,
            "games": self.games,
        }


@dataclass
class BradleyTerryRanking:
    """Generators ranked by strength (best first); ``note`` says why there is none."""

    judge: str
    baseline: str
    conditions: int
    strengths: list[Strength] = field(default_factory=list)
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "judge": self.judge,
            "baseline": self.baseline,
            "conditions": self.conditions,
            "ranking": [s.as_dict() for s in self.strengths],
            "note": self.note,
        }


def outcome_tensors(
    table: Sequence[Mapping[str, float]], generators: Sequence[str]
) -> tuple[Any, Any]:
    """Per condition, the wins matrix (``wins[c, i, j]`` = 1, 0.5 or 0 for generator i
    against j) and the games matrix (1 where both answered)."""
    import numpy as np

    index = {g: k for k, g in enumerate(generators)}
    size = len(generators)
    scores = np.full((len(table), size), np.nan)
    for row, condition in enumerate(table):
        for generator, value in condition.items():
            if generator in index:
                scores[row, index[generator]] = value
    present = ~np.isnan(scores)
    games = (present[:, :, None] & present[:, None, :]).astype(float)
    games[:, np.arange(size), np.arange(size)] = 0.0
    diff = np.nan_to_num(scores[:, :, None] - scores[:, None, :])
    wins = np.where(diff > TIE_TOLERANCE, 1.0, np.where(diff < -TIE_TOLERANCE, 0.0, 0.5))
    return wins * games, games


def fit_strengths(wins: Any, games: Any) -> Any:
    """Maximum-likelihood log-strengths for a stack of (wins, games) matrices.

    ``wins`` and ``games`` have shape (..., G, G); one virtual tie is added between every two
    generators that met. Returns log-strengths of shape (..., G) with mean zero.
    """
    import numpy as np

    met = (games > 0).astype(float)
    wins = wins + 0.5 * met
    games = games + met
    total_wins = wins.sum(axis=-1)
    strength = np.ones(wins.shape[:-1])
    for _ in range(MAX_ITERATIONS):
        pair_sum = strength[..., :, None] + strength[..., None, :]
        denominator = (games / pair_sum).sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            updated = np.where(denominator > 0, total_wins / denominator, strength)
        log_updated = np.log(updated)
        log_updated -= log_updated.mean(axis=-1, keepdims=True)
        updated = np.exp(log_updated)
        change = np.max(np.abs(np.log(updated) - np.log(strength)))
        strength = updated
        if change < TOLERANCE:
            break
    return np.log(strength)


def _connected(games: Any) -> bool:
    """True when the generators' comparison graph is connected."""
    size = games.shape[0]
    seen = {0}
    frontier = [0]
    while frontier:
        node = frontier.pop()
        for other in range(size):
            if games[node, other] > 0 and other not in seen:
                seen.add(other)
                frontier.append(other)
    return len(seen) == size


def bradley_terry(
    table: Sequence[Mapping[str, float]],
    generators: Sequence[str],
    baseline: str,
    *,
    judge: str,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> BradleyTerryRanking:
    """The ranking of ``generators`` from ``table`` (one dict generator -> score per condition).

    Strengths are relative to ``baseline``; the interval of each is the percentile interval
    of its bootstrap refits (conditions resampled, ``n_boot`` times, seeded).
    """
    import numpy as np

    from cigeval.stats import percentile_interval

    result = BradleyTerryRanking(judge, baseline, len(table))
    if len(generators) < 3:
        result.note = "a ranking needs three or more generators"
        return result
    wins, games = outcome_tensors(table, generators)
    total_games = games.sum(axis=0)
    if not _connected(total_games):
        result.note = "some generators never answered a condition in common with the others"
        return result
    point = fit_strengths(wins.sum(axis=0), total_games)
    base = list(generators).index(baseline)
    relative = point - point[base]
    boots = np.empty((0, len(generators)))
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        fitted = []
        for start in range(0, n_boot, _BLOCK):
            count = min(_BLOCK, n_boot - start)
            weights = rng.multinomial(len(table), np.full(len(table), 1.0 / len(table)), count)
            w = np.einsum("bc,cij->bij", weights, wins)
            g = np.einsum("bc,cij->bij", weights, games)
            logs = fit_strengths(w, g)
            fitted.append(logs - logs[:, base : base + 1])
        boots = np.concatenate(fitted)
    order = sorted(range(len(generators)), key=lambda k: (-relative[k], generators[k]))
    for k in order:
        low = high = None
        if boots.size:
            lo, hi = percentile_interval(boots[:, k], level)
            low, high = float(lo), float(hi)
        rank = 1 + sum(1 for other in relative if other > relative[k] + 1e-12)
        result.strengths.append(
            Strength(
                generator=generators[k],
                rank=rank,
                strength=float(relative[k]),
                low=low,
                high=high,
                games=int(total_games[k].sum()),
            )
        )
    return result
