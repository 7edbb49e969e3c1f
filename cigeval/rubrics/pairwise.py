"""The direct comparative judge (rubric ``pairwise``): the condition and every candidate in
one request, asked once per presentation order.

The judge sees the request's text, its input images (the source, the subject, ...) and the
candidates numbered 1..K in one order, never their labels (labels may name generators). It
answers a 0-10 score per candidate and a ranking. Each order's ranking is mapped back to the
labels; the sample keeps that ranking only when every order gave the same one. Otherwise the
candidates tie and the record says ``consistent: false``: an answer that flips with the order
shows position bias, not a preference. With K candidates all K! orders are asked (2 for a
pair, 6 for three, 24 for four); ``rubric_options={"orders": "rotations"}`` asks only the K
rotations (each candidate once in each position), a cheaper option that is not the default.

The record's ``score`` is the share of orders that gave the most common ranking (1.0 when
all agree): how stable the answer is, not how good any candidate is. The preference, ranking,
per-order answers and mean scores are in ``details`` (see :mod:`cigeval.rubrics.candidates`).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass
from itertools import permutations
from typing import Any

from cigeval.errors import InputError, ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.parsing import extract_json, parse_score
from cigeval.ranking import Ranking, all_tied, as_lists, canonical, parse_ranking
from cigeval.rubrics._shared import choice_option, failed_verdict, render_for, rubric_options
from cigeval.rubrics.candidates import (
    candidate_image,
    candidate_labels,
    combine_preferences,
    preference_details,
    reference_roles,
    require_candidates,
)
from cigeval.sample import Sample
from cigeval.sample_run import SampleRun
from cigeval.score import SubScore, Verdict
from cigeval.tasks.labels import condition_label

OPTIONS = ("orders",)
ORDERS = ("all", "rotations")
#: Candidates at most when every order is asked (4! = 24 requests per sample).
MAX_ALL_ORDERS = 4
_WORDS = re.compile(r"\b(candidates?|images?)\b\s*#?\s*", re.IGNORECASE)


@dataclass(frozen=True)
class OrderAnswer:
    """One presentation order's answer, by position (1 = shown first)."""

    ranking: Ranking
    scores: dict[str, float] | None
    reasoning: str


def parse_pairwise_reply(text: str, count: int) -> OrderAnswer:
    """Read ``{"reasoning", "scores": {"1": 0-10, ...}, "ranking": "2 > 1"}`` for ``count``
    candidates; ParseError naming the problem. ``scores`` may be left out; when given it
    must score every candidate."""
    data = extract_json(text, dict)
    lowered = {str(k).strip().lower(): v for k, v in data.items()}
    positions = [str(n) for n in range(1, count + 1)]
    raw = lowered.get("ranking")
    if raw is None:
        raise ParseError('the reply needs "ranking", e.g. "2 > 1"', text)
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        raw = str(int(raw))
    elif isinstance(raw, list):
        raw = [
            [str(m) for m in item] if isinstance(item, list) else str(item).strip() for item in raw
        ]
    if isinstance(raw, str):
        raw = _WORDS.sub("", raw)
    try:
        ranking = parse_ranking(raw, positions)
    except ValueError as exc:
        raise ParseError(
            f'"ranking": {exc}; rank the candidate numbers 1 to {count}, e.g. '
            f'"{" > ".join(reversed(positions))}"',
            text,
        ) from None
    scores = None
    given = lowered.get("scores")
    if given is not None:
        if not isinstance(given, dict):
            raise ParseError('"scores" must map each candidate number to a 0-10 score', text)
        cleaned = {_WORDS.sub("", str(k)).strip(): v for k, v in given.items()}
        missing = [p for p in positions if p not in cleaned]
        if missing:
            raise ParseError(f'"scores" leaves out candidate(s) {", ".join(missing)}', text)
        try:
            scores = {p: parse_score(cleaned[p], 0, 10) for p in positions}
        except ParseError as exc:
            raise ParseError(f'"scores": {exc}', text) from None
    reasoning = str(lowered.get("reasoning", lowered.get("reason", "")) or "").strip()
    return OrderAnswer(ranking, scores, reasoning)


def presentation_orders(labels: list[str], mode: str) -> list[tuple[str, ...]]:
    """Every order of ``labels`` (``all``) or their K rotations (``rotations``)."""
    if mode == "rotations":
        return [tuple(labels[i:] + labels[:i]) for i in range(len(labels))]
    return list(permutations(labels))


class PairwiseRubric:
    """The direct comparative judge; see the module docstring. Input: ``candidates`` (2 to
    4 with every order asked) plus the text fields and input images the task needs."""

    name = "pairwise"
    description = (
        "Direct comparison of a sample's candidates, asked in every presentation order; a "
        "ranking is kept only when the orders agree (else a tie, marked inconsistent)."
    )

    def validate(self, sample: Sample) -> None:
        """Require candidates and the task's text fields and input images."""
        require_candidates(sample, self.name)

    def _messages(self, run: SampleRun, order: tuple[str, ...]) -> list[Message]:
        sample = run.sample
        spec = run.task
        references = reference_roles(run)
        conditions = [(condition_label(k), v) for k, v in sample.text_fields().items()]
        parts: list[TextPart | ImagePart] = [
            TextPart(
                render_for(
                    run,
                    "pairwise_request.j2",
                    task_title=spec.title,
                    conditions=conditions,
                    references=bool(references),
                    count=len(order),
                )
            )
        ]
        for role in references:
            parts.append(TextPart(f"Input: {run.role_label(role)}"))
            parts.append(ImagePart(run.encode(run.loaded[role]), role))
        for number, label in enumerate(order, start=1):
            parts.append(TextPart(f"Candidate {number}:"))
            parts.append(ImagePart(run.encode(candidate_image(run, label)), f"candidate_{number}"))
        numbers = list(range(1, len(order) + 1))
        example = "2 > 1 or 1 = 2" if len(order) == 2 else "2 > 1 > 3 or 1 = 3 > 2"
        parts.append(
            TextPart(
                render_for(
                    run,
                    "pairwise_answer.j2",
                    count=len(order),
                    numbers=numbers,
                    example=example,
                    editing="source" in references,
                )
            )
        )
        return [
            Message.text("system", render_for(run, "pairwise_system.j2")),
            Message("user", tuple(parts)),
        ]

    async def _ask(self, run: SampleRun, order: tuple[str, ...]) -> OrderAnswer:
        answer = await run.judge.ask(
            f"rubric:pairwise:order {' '.join(order)}",
            self._messages(run, order),
            lambda text: parse_pairwise_reply(text, len(order)),
        )
        by_label = {str(n): label for n, label in enumerate(order, start=1)}
        ranking = tuple(tuple(by_label[p] for p in group) for group in answer.ranking)
        scores = None
        if answer.scores is not None:
            scores = {by_label[p]: value for p, value in answer.scores.items()}
        return OrderAnswer(ranking, scores, answer.reasoning)

    async def evaluate(self, run: SampleRun) -> Verdict:
        """Ask every order, keep the ranking they agree on (else a tie)."""
        options = rubric_options(run, self.name, OPTIONS)
        mode = choice_option(options, "orders", "all", ORDERS)
        labels = candidate_labels(run.sample)
        if mode == "all" and len(labels) > MAX_ALL_ORDERS:
            raise InputError(
                f"rubric pairwise: {len(labels)} candidates need {len(labels)}! orders; use "
                'rubric_options {"orders": "rotations"} or at most 4 candidates',
                run.sample.id,
            )
        orders = presentation_orders(labels, mode)
        outcomes = await asyncio.gather(
            *(self._ask(run, order) for order in orders), return_exceptions=True
        )
        failed = [(o, e) for o, e in zip(orders, outcomes, strict=True) if isinstance(e, Exception)]
        answers = [a for a in outcomes if isinstance(a, OrderAnswer)]
        per_order = [
            {
                "order": list(order),
                "ranking": as_lists(answer.ranking),
                "scores": answer.scores,
                "reasoning": answer.reasoning,
            }
            for order, answer in zip(orders, outcomes, strict=True)
            if isinstance(answer, OrderAnswer)
        ]
        if failed:
            order, error = failed[0]
            if not isinstance(error, ParseError):
                raise error  # a backend failure: the evaluator records it as the sample's error
            return failed_verdict(
                ParseError(f"order {' '.join(order)}: {error}"),
                {"candidates": labels, "orders": per_order},
            )
        return self._verdict(labels, answers, per_order, mode)

    def _verdict(
        self,
        labels: list[str],
        answers: list[OrderAnswer],
        per_order: list[dict[str, Any]],
        mode: str,
    ) -> Verdict:
        counts = Counter(canonical(a.ranking) for a in answers)
        most_common, agreeing = counts.most_common(1)[0]
        consistent = len(counts) == 1
        ranking = most_common if consistent else all_tied(labels)
        scores: dict[str, float] | None = None
        if all(a.scores is not None for a in answers):
            scores = {
                label: sum(a.scores[label] for a in answers if a.scores) / len(answers) / 10.0
                for label in labels
            }
        sub_scores = [
            SubScore(
                question_id=label,
                question=f"Candidate {label}: the judge's 0-10 score, mean over the orders",
                score=scores[label] * 10.0,
                reasoning=" | ".join(a.reasoning for a in answers if a.reasoning)[:4000],
            )
            for label in labels
            if scores is not None
        ]
        details = preference_details(labels, ranking, consistent, scores)
        details["orders"] = per_order
        details["order_mode"] = mode
        details["value_mapping"] = "share of the presentation orders that gave the same ranking"
        return Verdict(value=agreeing / len(answers), sub_scores=sub_scores, details=details)

    def combine_verdicts(
        self, verdicts: list[Verdict], labels: list[str], base: Verdict
    ) -> Verdict:
        """Several judges as one: see :func:`cigeval.rubrics.candidates.combine_preferences`."""
        return combine_preferences(verdicts, labels, base)
