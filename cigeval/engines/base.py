"""What a run needs of an engine, and the engine an :class:`EngineConfig` names.

A run (:mod:`cigeval.runs.run`) prepares its engine, has it check the judges, hands it the
pending samples and reads the Scores back; it never names an engine class.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, Protocol

from cigeval.engines.local import LocalEngine
from cigeval.engines.on_ray import RayEngine
from cigeval.engines.settings import EngineConfig
from cigeval.evaluation import Evaluator, SampleInput
from cigeval.score import Score
from cigeval.signals import Stop


class Engine(Protocol):
    """Where a run's samples are judged: this process, or the workers of a Ray cluster."""

    #: What the run's preflight line is labelled (``preflight``, ``preflight on Ray``).
    preflight_label: str

    def prepare(self, quiet: bool) -> None:
        """Get ready to judge (start or join a cluster); ``quiet`` hides status lines."""

    def preflight(self) -> list[str]:
        """Check the judges and tools where they will run; a line per check made."""

    def judge(
        self,
        items: Iterable[SampleInput],
        refresh_ids: Collection[str],
        accept: Callable[[Score], bool],
        stop: Stop,
        servers_down: Callable[[], bool] | None = None,
    ) -> None:
        """Hand each Score to ``accept`` as its sample finishes, until the items run out,
        ``accept`` returns False or a signal stops the run (its name goes to ``stop``).
        Samples whose id is in ``refresh_ids`` are judged without cached answers;
        ``servers_down``, where the engine can watch the requests, is asked now and then and
        True stops the run at once (the samples in flight get no record)."""

    def batch_stats(self) -> Any:
        """What the Batch API path did, or None."""

    def close(self) -> None:
        """Release what :meth:`prepare` took."""


def engine_for(settings: EngineConfig, evaluator: Evaluator, log_file: Path) -> Engine:
    """The engine ``settings`` names, judging with ``evaluator``'s judge; a Ray engine
    writes Ray's own log lines to ``log_file``."""
    if settings.engine == "ray":
        return RayEngine(evaluator, settings, log_file)
    return LocalEngine(evaluator)
