"""Preference items: one condition's candidates with the human's and the judge's verdicts.

Everything the preference meta-evaluation reads becomes :class:`PreferenceItem` objects,
whatever the file's layout. An item holds *comparisons*, one per pair of candidates: which
one the human preferred (or which kind of tie), which one the judge kept (None when it gave no
usable answer), and, where the judge was asked in several presentation orders, each order's
answer. A ranking of K candidates expands into its K(K-1)/2 comparisons; layouts that list
comparisons one by one (EditReward-Bench's results) give them directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cigeval.errors import InputError
from cigeval.ranking import TIE, Ranking, is_tie, pairs_of, parse_ranking, winner_of


@dataclass(frozen=True)
class Comparison:
    """Two candidates, and who preferred which.

    ``human`` and ``judge`` are the preferred label, ``tie`` or a kind of tie (``both_good``,
    ``both_bad``), or None (no label / no usable answer). ``orders`` holds the judge's answer
    in each presentation order, in the same terms.
    """

    first: str
    second: str
    human: str | None
    judge: str | None
    orders: tuple[str | None, ...] = ()


@dataclass
class PreferenceItem:
    """One condition's candidates (``labels``) and the comparisons between them.

    ``inconsistent`` is True when the judge's presentation orders disagreed (its answer was
    then turned into a tie), None when the layout does not say.
    """

    id: str
    task: str
    labels: list[str]
    comparisons: list[Comparison] = field(default_factory=list)
    inconsistent: bool | None = None

    @property
    def size(self) -> int:
        """K, the number of candidates."""
        return len(self.labels)

    @property
    def complete(self) -> bool:
        """True when every pair of candidates has a comparison with a human label."""
        wanted = len(self.labels) * (len(self.labels) - 1) // 2
        return sum(1 for c in self.comparisons if c.human is not None) == wanted


def tie_kind(value: Any) -> str:
    """The tie word ``value`` names, lower case (``tie``, ``both_good``, ``both_bad``)."""
    return str(value).strip().lower()


def _relation(ranking: Ranking | None, a: str, b: str, kind: str | None) -> str | None:
    if ranking is None:
        return None
    winner = winner_of(ranking, a, b)
    return (kind or TIE) if winner == TIE else winner


def ranking_or_none(value: Any, labels: Sequence[str], what: str, item: str) -> Ranking | None:
    """``value`` parsed as a ranking of ``labels`` (None stays None); InputError naming the
    item otherwise."""
    if value is None:
        return None
    try:
        return parse_ranking(value, labels)
    except ValueError as exc:
        raise InputError(f"{what}: {exc}", item) from None


def item_from_rankings(
    item_id: str,
    task: str,
    labels: Sequence[str],
    human: Any,
    judge: Any,
    orders: Sequence[Any] = (),
    inconsistent: bool | None = None,
) -> PreferenceItem:
    """An item from a human and a judge ranking (each a ranking value, a label, ``tie`` or a
    tie kind; None when absent) and the judge's per-order rankings."""
    labels = list(labels)
    human_ranking = ranking_or_none(human, labels, "human", item_id)
    judge_ranking = ranking_or_none(judge, labels, "judge", item_id)
    order_rankings = [ranking_or_none(o, labels, "judge order", item_id) for o in orders]
    human_kind = tie_kind(human) if is_tie(human) else None
    judge_kind = tie_kind(judge) if is_tie(judge) else None
    order_kinds = [tie_kind(o) if is_tie(o) else None for o in orders]
    comparisons = [
        Comparison(
            a,
            b,
            _relation(human_ranking, a, b, human_kind),
            _relation(judge_ranking, a, b, judge_kind),
            tuple(_relation(r, a, b, k) for r, k in zip(order_rankings, order_kinds, strict=True)),
        )
        for a, b in pairs_of(labels)
    ]
    return PreferenceItem(item_id, task, labels, comparisons, inconsistent)


def labels_of(*values: Any) -> list[str]:
    """The candidate labels named by rankings (``A``/``B`` when they name none but ties)."""
    named: dict[str, None] = {}
    for value in values:
        if value is None or is_tie(value):
            continue
        if isinstance(value, str):
            for group in value.split(">"):
                for member in group.split("="):
                    if member.strip():
                        named.setdefault(member.strip(), None)
        elif isinstance(value, list | tuple):
            for entry in value:
                members = entry if isinstance(entry, list | tuple) else [entry]
                for member in members:
                    named.setdefault(str(member).strip(), None)
    labels = list(named)
    if len(labels) < 2:
        labels = sorted({*labels, "A", "B"})
    return labels


def item_from_generic(line: Mapping[str, Any], number: int) -> PreferenceItem:
    """An item from one generic JSONL line (see docs/comparisons.md):
    ``{"id", "task", "human": "A"|"B"|"tie", "judge": ...}`` or ``human_ranking`` /
    ``judge_ranking`` lists for groups; optional ``candidates`` (the labels),
    ``judge_orders`` (the judge's answer in each presentation order) and ``inconsistent``."""
    item_id = str(line.get("id", f"line:{number}"))
    human = line.get("human_ranking", line.get("human"))
    judge = line.get("judge_ranking", line.get("judge"))
    orders = line.get("judge_orders") or []
    if not isinstance(orders, list):
        raise InputError("judge_orders must be a list of answers, one per order", item_id)
    labels = line.get("candidates")
    if labels is None:
        labels = labels_of(human, judge, *orders)
    if not isinstance(labels, list) or len(labels) < 2:
        raise InputError("candidates must list two or more labels", item_id)
    inconsistent = line.get("inconsistent")
    return item_from_rankings(
        item_id,
        str(line.get("task", "?")),
        [str(label) for label in labels],
        human,
        judge,
        orders,
        inconsistent if isinstance(inconsistent, bool) else None,
    )


def item_from_record(record: Mapping[str, Any]) -> PreferenceItem | None:
    """An item from a results record of rubric ``pairwise`` or ``pointwise`` (None for a
    record that holds no preference: another rubric, or an error)."""
    details = record.get("details")
    if record.get("status") != "ok" or not isinstance(details, Mapping):
        return None
    labels = details.get("candidates")
    ranking = details.get("ranking")
    if not isinstance(labels, list) or ranking is None:
        return None
    orders = [o.get("ranking") for o in details.get("orders") or [] if isinstance(o, Mapping)]
    consistent = details.get("consistent")
    return item_from_rankings(
        str(record["id"]),
        str(record.get("task", "?")),
        [str(label) for label in labels],
        record.get("human"),
        ranking,
        orders,
        None if not isinstance(consistent, bool) else not consistent,
    )
