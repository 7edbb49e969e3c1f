"""Runs: judging a set of samples into a results file, with every guarantee of a run.

One layer beneath the command line, used by ``cigeval evaluate`` and by
:meth:`cigeval.Evaluator.run`, above the judge (:mod:`cigeval.evaluation`) and the engines
(:mod:`cigeval.engines`, local and Ray): the lock on the results file, the resume, the
pending samples, the writer, the summary, the preflight's place, Ctrl-C and SIGTERM, the exit
status, and the end-of-run callbacks (:data:`RunCallback`) that experiment trackers attach to.

- :func:`run_samples`: the run itself.
- :func:`run_samples_file`: the run from Python (option overrides, an engine by name,
  trackers); :class:`Evaluator`, the public ``cigeval.Evaluator``, has it as ``run``.
- :class:`RunOptions`: the former name of :class:`cigeval.RunConfig`, whose run-file fields
  (resume or overwrite, retry errors, limit, trace in the records) a run reads.
- :class:`RunResult`: the summary, how the run ended, its exit status and settings.
- :mod:`cigeval.runs.status`: the exit statuses (docs/exit-statuses.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports
from cigeval.runs.status import (
    EXIT_CIRCUIT_BREAKER,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SAMPLE_ERRORS,
    EXIT_TERMINATED,
    EXIT_USAGE,
)

if TYPE_CHECKING:
    from cigeval.config import RunOptions
    from cigeval.runs.evaluator import Evaluator, run_samples_file
    from cigeval.runs.result import RunCallback, RunResult
    from cigeval.runs.run import Samples, run_samples

#: Public name -> its module, imported on first use: ``cigeval.runs.status`` (and the command
#: line, which needs only the exit statuses) must not pull in the evaluator and the engines.
_LAZY = {
    "Evaluator": "cigeval.runs.evaluator",
    "run_samples_file": "cigeval.runs.evaluator",
    "RunOptions": "cigeval.config",
    "RunCallback": "cigeval.runs.result",
    "RunResult": "cigeval.runs.result",
    "Samples": "cigeval.runs.run",
    "run_samples": "cigeval.runs.run",
}

__all__ = [
    "EXIT_CIRCUIT_BREAKER",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SAMPLE_ERRORS",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "Evaluator",
    "RunCallback",
    "RunOptions",
    "RunResult",
    "Samples",
    "run_samples",
    "run_samples_file",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
