"""The scoring core shared by every route: admission (backpressure), the deadline from the
request's arrival, one shared judge, and per-item results with the batch's tie statistics
and fill-ins."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from cigeval._caller import in_callers_words
from cigeval.serve.body import Refused
from cigeval.serve.fill import fill_rewards
from cigeval.serve.inputs import PreparedItem
from cigeval.serve.metrics import ServeMetrics
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


class ScoringService:
    """One judge (an :class:`~cigeval.Evaluator`) behind an admission limit.

    At most ``settings.concurrency`` items are judged at once, the judge keeping their model
    calls in flight (:meth:`~cigeval.Evaluator.allow_in_flight`); at most ``settings.max_queue``
    are held (judged or waiting): a batch that would go past it now is refused whole
    (:class:`QueueFull`, a 429 with Retry-After on the wire) rather than queued without
    bound, and a batch larger than ``max_queue``, which could never be admitted, is a 413.
    """

    def __init__(
        self, evaluator: Evaluator, settings: ServeConfig, metrics: ServeMetrics | None = None
    ) -> None:
        self.evaluator = evaluator
        self.settings = settings
        self.metrics = metrics or ServeMetrics(lambda: float(self.held))
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

    @contextlib.contextmanager
    def admitted(self, count: int) -> Iterator[None]:
        """Hold ``count`` items while the block runs: a 413 (:class:`Refused`) when they can
        never fit, :class:`QueueFull` when they do not fit now."""
        limit = self.settings.max_queue
        if count > limit:
            raise Refused(
                413,
                f"{count} items in one request, but the server holds at most {limit} items at "
                f"once ({in_callers_words(f'--max-queue {limit}', f'max_queue={limit}')}): "
                f"send batches of at most {limit} items",
            )
        if self._held + count > limit:
            raise QueueFull(f"{self._held} item(s) held, {count} asked, limit {limit}")
        self._held += count
        try:
            yield
        finally:
            self._held -= count

    async def score(
        self,
        items: Sequence[PreparedItem],
        *,
        arrived: float | None = None,
        reasoning: bool = False,
        protocol: str = "v1",
    ) -> ScoreResponse:
        """Admit ``items`` together (or raise) and :meth:`judge` them."""
        with self.admitted(len(items)):
            return await self.judge(items, arrived=arrived, reasoning=reasoning, protocol=protocol)

    async def judge(
        self,
        items: Sequence[PreparedItem],
        *,
        arrived: float | None = None,
        reasoning: bool = False,
        protocol: str = "v1",
        counted: bool = True,
    ) -> ScoreResponse:
        """Judge admitted ``items`` in order. ``arrived`` (``time.monotonic()``) is when the
        request arrived: the deadline runs from it (default: now). ``counted=False`` keeps
        the batch out of the metrics (the warm-up)."""
        deadline = self.settings.deadline_s
        started = time.monotonic() if arrived is None else arrived
        reasoning = reasoning or self.settings.reasoning
        outcomes = await asyncio.gather(
            *(self._one(item, started, deadline, reasoning) for item in items)
        )
        results = [result for result, _, _ in outcomes]
        keys = [item.group_key for item in items]
        filled = fill_rewards(results, keys, self.settings)
        stats = batch_stats(results, keys, sum(p for _, p, _ in outcomes), filled)
        latencies = [latency for _, _, calls in outcomes for latency in calls]
        if counted:
            self.metrics.batch(protocol, results, stats, latencies)
        return ScoreResponse(
            results=results,
            stats=stats,
            judge=self.evaluator.judge_identity,
            score_mode=self.settings.score_mode,
        )

    async def _one(
        self, item: PreparedItem, started: float, deadline: float | None, reasoning: bool
    ) -> tuple[ItemResult, int, list[float]]:
        base = {"index": item.index, "id": item.id, "group": item.group}
        if item.sample is None:
            return ItemResult(**base, status="error", error=item.problem), 0, []
        try:
            if deadline is None:
                score = await self._judge(item)
            else:
                left = deadline - (time.monotonic() - started)
                if left <= 0:
                    raise TimeoutError
                score = await asyncio.wait_for(self._judge(item), timeout=left)
        except TimeoutError:
            elapsed = round((time.monotonic() - started) * 1000)
            error = f"not judged within the deadline of {deadline:g} s"
            return ItemResult(**base, status="timeout", error=error, latency_ms=elapsed), 0, []
        except Exception as exc:  # a judge failure is this item's error, never the batch's
            failure = f"{type(exc).__name__}: {exc}"
            return ItemResult(**base, status="error", error=failure), 0, []
        latencies = [c.latency_s for c in score.trace.model_calls() if not c.cached]
        return item_result(score, item, reasoning), parse_failures(score), latencies

    async def _judge(self, item: PreparedItem) -> Score:
        async with self._semaphore():
            assert item.sample is not None
            return await self.evaluator.evaluate_async(item.sample)


def item_result(score: Score, item: PreparedItem, reasoning: bool = False) -> ItemResult:
    """The wire form of one judged item (each sub-question's reasoning when ``reasoning``)."""
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
                reasoning=(s.reasoning or "") if reasoning else None,
                evidence=list(s.evidence),
            )
            for s in score.sub_scores
        ],
        calibrated=score.calibrated,
        error=score.error,
        latency_ms=int(usage.get("wall_ms", 0)),
        calls=int(usage.get("calls", 0)),
        cached_calls=int(usage.get("cached_calls", 0)),
    )


def parse_failures(score: Score) -> int:
    """Judge replies of ``score`` that could not be read (each noted in its trace)."""
    from cigeval.trace import ErrorEvent

    return sum(
        1
        for event in score.trace.events
        if isinstance(event, ErrorEvent) and _UNUSABLE_REPLY in event.message
    )


def batch_stats(
    results: Sequence[ItemResult],
    keys: Sequence[str | None],
    unreadable: int = 0,
    filled: int = 0,
) -> BatchStats:
    """Counts by status and the tie statistics of the groups with two scored items or more
    (``keys``: each item's group)."""
    by_group: dict[str, list[float]] = {}
    for result, key in zip(results, keys, strict=True):
        if key is not None and result.score is not None:
            by_group.setdefault(key, []).append(result.score)
    spreads = [max(s) - min(s) for s in by_group.values() if len(s) >= 2]
    return BatchStats(
        items=len(results),
        ok=sum(r.status == "ok" for r in results),
        error=sum(r.status == "error" for r in results),
        timeout=sum(r.status == "timeout" for r in results),
        parse_failures=unreadable,
        filled=filled,
        groups=len(spreads),
        tied_group_share=(sum(s == 0 for s in spreads) / len(spreads)) if spreads else None,
        mean_group_spread=statistics.fmean(spreads) if spreads else None,
    )
