"""What happens to each Score as its sample finishes: the run's policies, then the writer and
the summary."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cigeval._caller import in_callers_words
from cigeval.redact import redact_credentials
from cigeval.runs.breaker import CircuitBreaker
from cigeval.sample_files import image_file_hashes
from cigeval.signals import CIRCUIT_BREAKER, Stop

if TYPE_CHECKING:
    from cigeval.backends.reachability import ServersDown
    from cigeval.config import RunConfig
    from cigeval.results.jsonl import ResultsWriter
    from cigeval.results.summary import RunSummary
    from cigeval.score import Score


def refuse_degraded(score: Score) -> Score:
    """``score`` as an error record saying which sub-questions were judged without the tool
    the plan chose, and why (``--on-degraded error``)."""
    notes = "; ".join(
        f"{s.question_id}: {s.note or 'judged without the tool the plan chose'}"
        for s in score.sub_scores
        if s.degraded
    )
    error = (
        f"refused by {in_callers_words('--on-degraded error', 'on_degraded=' + repr('error'))}: "
        f"{len(score.degraded_questions)} sub-question(s) "
        f"judged without the tool the plan chose ({notes}); the score would have been "
        f"{score.value!r}"
    )
    return score.model_copy(update={"status": "error", "value": None, "error": error})


class Recorder:
    """Applies the run's options to each Score (``on_degraded``, the circuit breaker), writes
    what is to be written and counts it in the summary; :meth:`accept` says whether the run
    goes on."""

    def __init__(
        self,
        writer: ResultsWriter,
        summary: RunSummary,
        options: RunConfig,
        stop: Stop,
        progress: Any,
    ) -> None:
        self.writer = writer
        self.summary = summary
        self.options = options
        self.stop = stop
        self.progress = progress
        self.breaker = CircuitBreaker(options.circuit_breaker)
        #: Entries added to each record's provenance (e.g. the samples file's snapshot).
        self.provenance: dict[str, Any] = {}
        #: The items being judged by id (``PendingCounts.items``): the sha256 of the image
        #: files of one whose Score does not hold them (it came from a Ray worker; within
        #: the run a local evaluator hashes them off the event loop, also when its images
        #: were never loaded) are read from them for its ``provenance.image_files``.
        self.items: dict[str, Any] = {}
        #: Where each item being judged stands in the input (``PendingCounts.positions``),
        #: recorded as ``provenance.input_position`` so reports can keep the input's order.
        self.positions: dict[str, int] = {}
        #: Adds the calibrated value to a Score that lacks it (a Ray worker's evaluator holds
        #: no calibration; the driver's does), or None without a calibration.
        self.calibrate: Callable[[Score], Score] | None = None
        summary.degraded_are_errors = options.on_degraded == "error"

    def accept(self, score: Score) -> bool:
        """Record one finished sample; False when the run must stop (the breaker tripped)."""
        if self.options.on_degraded == "error" and score.ok and score.degraded_questions:
            score = refuse_degraded(score)
        released, trip = self.breaker.offer(score)
        for ready in released:
            self._write(ready)
        self.progress.update(1)
        self.progress.set_postfix(errors=self.summary.statuses["error"], refresh=False)
        if trip:
            self.stop.request(CIRCUIT_BREAKER)
            return False
        return True

    def servers_down(self, seen: ServersDown) -> bool:
        """The request rule of the breaker: stop the run (True when this is why it stops)."""
        if not self.stop.request(CIRCUIT_BREAKER):
            return False
        message = f"{seen.failures} requests failed, the last: {seen.detail}"
        self.breaker.trip_unreachable(f"transport.{seen.reason}", message, seen.seconds)
        return True

    def finish(self) -> None:
        """Write the Scores the breaker still holds (the run ended without tripping it)."""
        for score in self.breaker.release():
            self._write(score)

    def _write(self, score: Score) -> None:
        if self.calibrate is not None:
            score = self.calibrate(score)
        if score.error and redact_credentials(score.error) != score.error:
            score = score.model_copy(update={"error": redact_credentials(score.error)})
        extra = dict(self.provenance)
        item = self.items.pop(score.id, None)
        files = score.file_hashes
        if not files and item is not None:
            files = image_file_hashes(item, self.options.max_image_bytes)
        if files:
            extra["image_files"] = files
        position = self.positions.pop(score.id, None)
        if position is not None:
            extra["input_position"] = position
        if extra:
            score = score.model_copy(update={"provenance": {**score.provenance, **extra}})
        self.writer.write(score)
        self.summary.add(score)
