"""The scoring core shared by every route: admission (backpressure), the per-request
deadline, one shared judge, and per-item results with the batch's tie statistics."""

from __future__ import annotations

import asyncio
import html
import statistics
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cigeval.serve.inputs import PreparedItem
from cigeval.serve.models import BatchStats, ItemResult, ScoreResponse, SubScoreResult
from cigeval.serve.settings import ServeConfig

if TYPE_CHECKING:
    from cigeval.evaluation import Evaluator
    from cigeval.score import Score

#: How the session marks a judge reply it could not use (cigeval.session): counted as a
#: parse failure.
_UNUSABLE_REPLY = "; the reply: "


class QueueFull(Exception):
    """The service holds as many items as it admits; the caller should retry later."""


def escape(text: str | None) -> str | None:
    """Model (or model-quoting) text made safe to show in a page: ``<``, ``>``, ``&`` and
    quotes escaped."""
    return None if text is None else html.escape(text, quote=True)


class ScoringService:
    """One judge (an :class:`~cigeval.Evaluator`) behind an admission limit.

    At most ``settings.concurrency`` items are judged at once, the judge keeping their model
    calls in flight (:meth:`~cigeval.Evaluator.allow_in_flight`); at most ``settings.max_queue``
    are held (judged or waiting): a batch that would go past it is refused whole
    (:class:`QueueFull`, a 429 on the wire) rather than queued without bound.
    """

    def __init__(self, evaluator: Evaluator, settings: ServeConfig) -> None:
        self.evaluator = evaluator
        self.settings = settings
        self._held = 0
        self._slots: asyncio.Semaphore | None = None
        evaluator.allow_in_flight(settings.concurrency)

    @property
    def held(self) -> int:
        """Items admitted and not yet answered."""
        return self._held

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:  # made in the server's event loop
            self._slots = asyncio.Semaphore(self.settings.concurrency)
        return self._slots

    async def score(self, items: Sequence[PreparedItem]) -> ScoreResponse:
        """Judge ``items`` (admitted together, or QueueFull), in order."""
        if self._held + len(items) > self.settings.max_queue:
            raise QueueFull(
                f"{self._held} item(s) held, {len(items)} asked, limit {self.settings.max_queue}"
            )
        self._held += len(items)
        try:
            deadline = self.settings.deadline_s
            started = time.monotonic()
            results = await asyncio.gather(*(self._one(item, started, deadline) for item in items))
        finally:
            self._held -= len(items)
        return ScoreResponse(
            results=[r for r, _ in results],
            stats=batch_stats([r for r, _ in results], sum(p for _, p in results)),
            judge=self.evaluator.judge_identity,
            score_mode=self.settings.score_mode,
        )

    async def _one(
        self, item: PreparedItem, started: float, deadline: float | None
    ) -> tuple[ItemResult, int]:
        base = {"index": item.index, "id": item.id, "group": item.group}
        if item.sample is None:
            return ItemResult(**base, status="error", error=escape(item.problem)), 0
        try:
            if deadline is None:
                score = await self._judge(item)
            else:
                left = deadline - (time.monotonic() - started)
                score = await asyncio.wait_for(self._judge(item), timeout=max(left, 0.0))
        except TimeoutError:
            elapsed = round((time.monotonic() - started) * 1000)
            error = f"not judged within the deadline of {deadline:g} s"
            return ItemResult(**base, status="timeout", error=error, latency_ms=elapsed), 0
        except Exception as exc:  # a judge failure is this item's error, never the batch's
            failure = escape(f"{type(exc).__name__}: {exc}")
            return ItemResult(**base, status="error", error=failure), 0
        return item_result(score, item), parse_failures(score)

    async def _judge(self, item: PreparedItem) -> Score:
        async with self._semaphore():
            assert item.sample is not None
            return await self.evaluator.evaluate_async(item.sample)


def item_result(score: Score, item: PreparedItem) -> ItemResult:
    """The wire form of one judged item."""
    usage = score.usage or {}
    return ItemResult(
        index=item.index,
        id=item.id,
        group=item.group,
        status="ok" if score.status == "ok" and score.value is not None else "error",
        score=score.value if score.status == "ok" else None,
        sub_scores=[
            SubScoreResult(
                question_id=s.question_id,
                score=s.score,
                reasoning=escape(s.reasoning) or "",
                evidence=[e.model_copy(update={"label": escape(e.label)}) for e in s.evidence],
            )
            for s in score.sub_scores
        ],
        error=escape(score.error),
        latency_ms=int(usage.get("wall_ms", 0)),
        calls=int(usage.get("calls", 0)),
    )


def parse_failures(score: Score) -> int:
    """Judge replies of ``score`` that could not be read (each noted in its trace)."""
    from cigeval.trace import ErrorEvent

    return sum(
        1
        for event in score.trace.events
        if isinstance(event, ErrorEvent) and _UNUSABLE_REPLY in event.message
    )


def batch_stats(results: Sequence[ItemResult], unreadable: int) -> BatchStats:
    """Counts by status and the tie statistics of the groups with two scored items or more."""
    by_group: dict[str, list[float]] = {}
    for result in results:
        if result.group is not None and result.score is not None:
            by_group.setdefault(result.group, []).append(result.score)
    spreads = [max(s) - min(s) for s in by_group.values() if len(s) >= 2]
    return BatchStats(
        items=len(results),
        ok=sum(r.status == "ok" for r in results),
        error=sum(r.status == "error" for r in results),
        timeout=sum(r.status == "timeout" for r in results),
        parse_failures=unreadable,
        groups=len(spreads),
        tied_group_share=(sum(s == 0 for s in spreads) / len(spreads)) if spreads else None,
        mean_group_spread=statistics.fmean(spreads) if spreads else None,
    )
