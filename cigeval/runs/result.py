"""What a run did: its summary, how it ended, its exit status, and the settings it ran with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.engines.settings import EngineConfig
from cigeval.results.summary import RunSummary
from cigeval.runs.breaker import CircuitBreaker
from cigeval.runs.status import (
    EXIT_CIRCUIT_BREAKER,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SAMPLE_ERRORS,
    EXIT_TERMINATED,
)
from cigeval.signals import CIRCUIT_BREAKER, SIGTERM


@dataclass(repr=False)
class RunResult:
    """The outcome of one run over a results file (``cigeval evaluate``, ``Evaluator.run``).

    ``summary`` counts this run's samples (and the errors recorded by earlier runs);
    ``stopped_by`` says why the run ended before its last sample (``"SIGINT"``,
    ``"SIGTERM"``, ``"circuit breaker"``, then ``breaker`` says what it saw), None when it
    judged everything; ``duplicates`` counts repeated sample ids that were not judged
    again. ``config``, ``run_config`` (its run-file fields included), ``ensemble`` and
    ``engine`` are the settings it ran with, ``out`` the results file it appended to.
    """

    out: Path
    summary: RunSummary
    wall_s: float
    config: EvalConfig
    run_config: RunConfig
    ensemble: EnsembleConfig
    engine: EngineConfig
    duplicates: int = 0
    stopped_by: str | None = None
    breaker: CircuitBreaker | None = None
    #: Problems met after the run ended (an end-of-run callback that failed), one line each.
    notes: list[str] = field(default_factory=list)

    @property
    def options(self) -> RunConfig:
        """The run's settings (``run_config``), under the name of the former ``RunOptions``."""
        return self.run_config

    @property
    def exit_status(self) -> int:
        """The status ``cigeval evaluate`` exits with (:mod:`cigeval.runs.status`)."""
        if self.stopped_by == CIRCUIT_BREAKER:
            return EXIT_CIRCUIT_BREAKER
        if self.stopped_by is not None:
            return EXIT_TERMINATED if self.stopped_by == SIGTERM else EXIT_INTERRUPTED
        return EXIT_OK if self.summary.all_ok else EXIT_SAMPLE_ERRORS

    @property
    def ok(self) -> bool:
        """True when the run finished and every sample of the results file ended ``ok``."""
        return self.exit_status == EXIT_OK

    def as_dict(self) -> dict[str, Any]:
        """The machine-readable summary, with the results file, how the run ended and its
        exit status."""
        return {
            **self.summary.as_dict(self.wall_s),
            "out": str(self.out),
            "duplicates": self.duplicates,
            "stopped_by": self.stopped_by,
            "circuit_breaker": (
                {
                    "reason": self.breaker.tripped,
                    "streak": self.breaker.streak,
                    "unreachable_s": self.breaker.unreachable_s,
                }
                if self.breaker is not None
                else None
            ),
            "exit_status": self.exit_status,
        }

    def _reached(self, seconds: float) -> str:
        """What the requests that tripped the breaker did not do for ``seconds``."""
        if self.breaker is not None and self.breaker.tripped == "transport.rate_limited":
            return f"was served by the judge for {seconds:.0f} s: it is rate limited (HTTP 429)"
        return f"reached the judge for {seconds:.0f} s"

    def render(self) -> str:
        """The closing summary as ``cigeval evaluate`` prints it."""
        lines = [self.summary.render(self.wall_s)]
        if self.duplicates:
            lines.append(f"{self.duplicates} repeated sample id(s) were not evaluated")
        rerun = in_callers_words("rerun the same command", "run it again")
        off = in_callers_words("--circuit-breaker 0", "circuit_breaker=0")
        if self.breaker is not None and self.breaker.unreachable_s is not None:
            lines.append(
                f"cigeval: stopped by the circuit breaker: no request "
                f"{self._reached(self.breaker.unreachable_s)} ({self.breaker.tripped}; "
                f"{self.breaker.message}). The samples in flight have no record: once the "
                f"server answers, {rerun} to resume ({off} turns the breaker off)"
            )
        elif self.breaker is not None:
            lines.append(
                f"cigeval: stopped by the circuit breaker: {self.breaker.streak} samples in a "
                f"row could not reach the judge ({self.breaker.tripped}; the last: "
                f"{self.breaker.message}). They and the samples in flight have no record: "
                f"once the server answers, {rerun} to resume ({off} turns the breaker off)"
            )
        elif self.stopped_by is not None:
            how = "terminated (SIGTERM)" if self.stopped_by == SIGTERM else "interrupted"
            lines.append(
                f"cigeval: {how}; the records above are kept and the samples in flight were "
                "left for the next run: rerun the same command to resume"
            )
        lines.extend(self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        statuses = self.summary.statuses
        return (
            f"RunResult(out={str(self.out)!r}, ok={statuses['ok']}, error={statuses['error']}, "
            f"stopped_by={self.stopped_by!r}, exit_status={self.exit_status})"
        )


#: An end-of-run consumer (an experiment tracker, a notifier): called once with the
#: :class:`RunResult` after the results file is closed, also when the run stopped early.
RunCallback = Callable[[RunResult], object]
