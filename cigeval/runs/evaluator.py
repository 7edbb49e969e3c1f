"""A whole results file judged from Python: :func:`run_samples_file`, and ``cigeval.Evaluator``,
the judge of :mod:`cigeval.evaluation` with :meth:`~Evaluator.run` added.

The judge itself only turns samples into Scores; files, engines and trackers belong to the run,
so the method that reaches them is added here, one layer up.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from cigeval.config import RUN_FILE_FIELDS, RunConfig
from cigeval.engines.settings import EngineConfig
from cigeval.errors import ConfigError
from cigeval.evaluation import evaluator as judging
from cigeval.runs.result import RunCallback, RunResult
from cigeval.runs.run import Samples, run_file_settings, run_samples
from cigeval.tracking import trackers_for


def run_samples_file(
    evaluator: judging.Evaluator,
    samples: Samples,
    out: str | os.PathLike[str],
    *,
    options: RunConfig | None = None,
    engine: EngineConfig | str | None = None,
    callbacks: Sequence[RunCallback] = (),
    prices: dict[str, dict[str, float]] | None = None,
    quiet: bool = False,
    track: Any = None,
    **option_overrides: Any,
) -> RunResult:
    """Judge ``samples`` with ``evaluator`` into the results file ``out``, with every
    guarantee of ``cigeval evaluate``: one run per file, resume, each record written as its
    sample finishes, the summary (see :func:`cigeval.runs.run_samples`).

    ``samples`` is a samples JSONL path or any iterable of Samples, samples-file lines
    or dicts. The run-file fields of :class:`~cigeval.RunConfig`
    (:data:`~cigeval.config.RUN_FILE_FIELDS`) come from ``options`` when given, else from
    the evaluator's ``run_config``; keyword arguments override them (``overwrite=True``,
    ``retry_errors=True``, ``limit=10``); ``engine`` is
    ``"local"`` (default), ``"ray"`` or an :class:`~cigeval.engines.EngineConfig`;
    each of ``callbacks`` gets the :class:`~cigeval.runs.RunResult` at the end.
    ``track`` logs the run to an experiment tracker when it ends: ``"wandb"``,
    ``"mlflow"``, a :class:`cigeval.tracking.Tracker`, or a list of them
    (docs/tracking.md).
    Returns that result (``print(result)`` shows the summary); Ctrl-C ends the run
    cleanly and is raised again as KeyboardInterrupt once the records are safe.
    """
    base = run_file_settings(evaluator.run_config, options)
    if option_overrides:
        try:
            if unknown := sorted(set(option_overrides) - set(RUN_FILE_FIELDS)):
                raise ValueError(f"{', '.join(unknown)}: not a run option")
            base = RunConfig.model_validate({**base.model_dump(), **option_overrides})
        except Exception as exc:
            raise ConfigError(f"invalid run options: {exc}") from None
    if isinstance(engine, str):
        engine = EngineConfig(engine=engine)
    result = run_samples(
        evaluator,
        samples,
        out,
        options=base,
        engine=engine,
        prices=prices,
        callbacks=[*callbacks, *trackers_for(track)],
        quiet=quiet,
    )
    if result.stopped_by == "SIGINT":
        raise KeyboardInterrupt
    return result


class Evaluator(judging.Evaluator):
    """A judge model (or an ensemble of judges) plus settings, built once and called on one
    sample, on thousands, or on a whole results file (:meth:`run`).

    Everything but :meth:`run` is :class:`cigeval.evaluation.Evaluator`'s (the arguments,
    the preflight, ``evaluate``, ``evaluate_many``, ``stream``); ``judge.run(samples,
    out=...)`` is :func:`run_samples_file` with this evaluator.
    """

    run = run_samples_file
