"""What the batch path did in a run: batches per stage, calls per batch, tokens for cost."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class BatchEntry:
    """One batch this run submitted or resumed."""

    id: str
    stage: int
    model: str
    requests: int
    resumed: bool = False
    status: str = "submitted"


@dataclass
class BatchStats:
    """Counts kept by the batch coordinator (see :meth:`as_dict`)."""

    batches: list[BatchEntry] = field(default_factory=list)
    replies: int = 0
    failed_lines: int = 0
    resubmitted: int = 0
    errors: int = 0
    #: Tokens of the replies read from batches, by the model name the server reported.
    tokens: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    @property
    def calls_sent(self) -> int:
        """Requests submitted in new batches by this run (resumed batches not counted)."""
        return sum(b.requests for b in self.batches if not b.resumed)

    def stages(self) -> dict[int, list[int]]:
        """stage -> the number of requests of each of its batches."""
        found: dict[int, list[int]] = defaultdict(list)
        for batch in self.batches:
            found[batch.stage].append(batch.requests)
        return dict(sorted(found.items()))

    def as_dict(self) -> dict[str, Any]:
        """Machine-readable form (for the run summary and the benchmark)."""
        return {
            "batches": len(self.batches),
            "resumed_batches": sum(1 for b in self.batches if b.resumed),
            "calls_sent": self.calls_sent,
            "replies": self.replies,
            "failed_lines": self.failed_lines,
            "resubmitted": self.resubmitted,
            "errors": self.errors,
            "calls_per_batch_by_stage": {str(k): v for k, v in self.stages().items()},
            "tokens": {model: list(v) for model, v in self.tokens.items()},
        }
