"""Rankings of candidates: who is preferred to whom, ties included.

A ranking is a tuple of groups, best first; the candidates of one group tie. It is written
``"B > A = C"`` (``>`` between groups, ``=`` inside one) or as a list ``["B", ["A", "C"]]``.
For two candidates a single label (the preferred one) or ``"tie"`` is enough. The words
``both_good`` and ``both_bad`` are ties too (GenAI-Bench distinguishes the two kinds of tie).
Used by samples (a human label), the preference rubrics and the preference meta-evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Any

#: The plain tie, and the kinds of tie a label may name.
TIE = "tie"
TIE_KINDS = (TIE, "both_good", "both_bad")
#: Characters a candidate label cannot hold (they write rankings).
RESERVED_CHARACTERS = ">=,"

Ranking = tuple[tuple[str, ...], ...]


def is_tie(label: Any) -> bool:
    """True when ``label`` names a tie (``tie``, ``both_good``, ``both_bad``; any case)."""
    return isinstance(label, str) and label.strip().lower() in TIE_KINDS


def all_tied(labels: Iterable[str]) -> Ranking:
    """The ranking in which every candidate ties."""
    return (tuple(labels),)


def _groups_of(value: Any) -> list[list[str]]:
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("an empty ranking")
        return [[m.strip() for m in group.split("=")] for group in text.split(">")]
    if isinstance(value, list | tuple):
        groups = []
        for item in value:
            if isinstance(item, str):
                groups.append([item.strip()])
            elif isinstance(item, list | tuple) and all(isinstance(m, str) for m in item):
                groups.append([m.strip() for m in item])
            else:
                raise ValueError(f"a ranking lists labels or lists of tied labels, not {item!r}")
        return groups
    raise ValueError(f"a ranking is a string like 'B > A' or a list, not {type(value).__name__}")


def parse_ranking(value: Any, labels: Sequence[str]) -> Ranking:
    """The ranking ``value`` gives of the candidates ``labels``.

    Accepts a ranking string or list naming every candidate exactly once, ``"tie"`` (all
    tie), or, with two candidates, the preferred label alone. Raises ValueError naming the
    problem.
    """
    known = list(labels)
    if is_tie(value):
        return all_tied(known)
    if isinstance(value, str) and value.strip() in known and ">" not in value:
        if len(known) != 2:
            raise ValueError(
                f"one label ({value.strip()!r}) ranks only two candidates; give the whole "
                f"ranking of {', '.join(known)}, e.g. '{' > '.join(known)}'"
            )
        winner = value.strip()
        return ((winner,), tuple(label for label in known if label != winner))
    groups = _groups_of(value)
    named = [m for group in groups for m in group]
    unknown = [m for m in named if m not in known]
    if unknown:
        raise ValueError(
            f"unknown candidate(s) {', '.join(map(repr, unknown))}; the candidates are "
            f"{', '.join(known)}"
        )
    repeated = sorted({m for m in named if named.count(m) > 1})
    missing = [label for label in known if label not in named]
    if repeated or missing:
        problems = []
        if repeated:
            problems.append(f"names {', '.join(repeated)} more than once")
        if missing:
            problems.append(f"leaves out {', '.join(missing)}")
        raise ValueError("the ranking " + " and ".join(problems))
    return tuple(tuple(group) for group in groups if group)


def canonical(ranking: Ranking) -> Ranking:
    """The ranking with each group's members sorted (so equal rankings compare equal)."""
    return tuple(tuple(sorted(group)) for group in ranking)


def ranking_text(ranking: Ranking) -> str:
    """``"B > A = C"``."""
    return " > ".join(" = ".join(group) for group in ranking)


def preference_of(ranking: Ranking) -> str:
    """The one best candidate, or ``"tie"`` when the best group holds several."""
    return ranking[0][0] if ranking and len(ranking[0]) == 1 else TIE


def position(ranking: Ranking, label: str) -> int:
    """The 0-based group index of ``label`` (smaller is better)."""
    for index, group in enumerate(ranking):
        if label in group:
            return index
    raise KeyError(label)


def winner_of(ranking: Ranking, first: str, second: str) -> str:
    """Which of two candidates the ranking prefers, or ``"tie"``."""
    a, b = position(ranking, first), position(ranking, second)
    return first if a < b else second if b < a else TIE


def pairs_of(labels: Sequence[str]) -> list[tuple[str, str]]:
    """Every unordered pair of candidates, in label order."""
    return list(combinations(labels, 2))


def ranking_from_scores(scores: dict[str, float], tolerance: float = 1e-9) -> Ranking:
    """Candidates ranked by score, highest first; scores within ``tolerance`` tie."""
    ordered = sorted(scores, key=lambda label: -scores[label])
    groups: list[list[str]] = []
    for label in ordered:
        if groups and abs(scores[groups[-1][0]] - scores[label]) <= tolerance:
            groups[-1].append(label)
        else:
            groups.append([label])
    return tuple(tuple(group) for group in groups)


def as_lists(ranking: Ranking) -> list[list[str]]:
    """The ranking as JSON-ready lists."""
    return [list(group) for group in ranking]
