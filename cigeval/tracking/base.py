"""A tracker: what every experiment tracker does with a finished run or a probe report.

A :class:`Tracker` is an end-of-run callback (:data:`cigeval.runs.RunCallback`): called with
the :class:`~cigeval.runs.RunResult`, it opens one tracker run and logs the settings and
fingerprint, the summary figures, the records as a table, the results file and the HTML
report (:mod:`cigeval.tracking.content` says what each is). Subclasses only say how their
tracker opens a run (:meth:`Tracker._open`) and how a :class:`TrackedRun` logs each part.
Construction checks what can be checked before a run (the SDK is installed, the store can be
used), so a misconfigured tracker stops a run before its first sample.
"""

from __future__ import annotations

import tempfile
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval.tracking.content import (
    image_paths,
    probe_figures,
    results_of,
    run_config,
    run_figures,
    table_columns,
    table_row,
)

if TYPE_CHECKING:
    from cigeval.runs.result import RunResult

#: Rows of the records table shown with their images (the rest have the row only).
DEFAULT_MAX_IMAGES = 1000


class TrackedRun(ABC):
    """One open run of a tracker."""

    @abstractmethod
    def log_figures(self, figures: dict[str, float]) -> None:
        """The run's summary figures (final values, not a time series)."""

    @abstractmethod
    def log_summary(self, summary: dict[str, Any]) -> None:
        """The machine-readable summary, kept as a JSON file of the run."""

    @abstractmethod
    def log_table(
        self, columns: list[str], rows: list[list[Any]], images: list[dict[str, Path]]
    ) -> None:
        """The records table; ``images[i]`` holds row i's image files by role (may be empty)."""

    @abstractmethod
    def log_file(self, path: Path, kind: str) -> None:
        """A file of the run: ``kind`` is ``results``, ``report``, ``probe-report`` or
        ``probe-records``."""

    @abstractmethod
    def close(self, failed: bool) -> None:
        """End the run (marked failed when logging failed)."""


class Tracker(ABC):
    """An experiment tracker that a run reports to when it ends (call it with the result).

    ``project``: the tracker's project (W&B) or experiment (MLflow), default ``cigeval``.
    ``run_name``: the tracker run's name (default: the results file's name). ``max_images``:
    rows of the records table shown with their images. ``report``: log the HTML report.
    """

    #: The name ``--track`` and ``track=`` use.
    name = "tracker"

    def __init__(
        self,
        *,
        project: str | None = None,
        run_name: str | None = None,
        max_images: int = DEFAULT_MAX_IMAGES,
        report: bool = True,
    ) -> None:
        self.project = project or "cigeval"
        self.run_name = run_name
        self.max_images = max_images
        self.with_report = report
        self.check()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(project={self.project!r}, run_name={self.run_name!r})"

    def check(self) -> None:  # noqa: B027 - optional: trackers with nothing to check keep it
        """Raise MissingDependency or ConfigError when the tracker cannot be used."""

    @abstractmethod
    def _open(self, name: str, config: dict[str, Any], job: str) -> TrackedRun:
        """Open a tracker run named ``name`` with its ``config``; ``job`` says what it is
        (``evaluate`` or ``probe``)."""

    def __call__(self, result: RunResult) -> None:
        """Log a finished run (the end-of-run callback)."""
        self.log_run(result)

    def log_run(self, result: RunResult) -> None:
        """Log a finished run: settings, figures, records table, results file, report."""
        from cigeval.report import write_report

        records = results_of(result)
        base_dir = result.out.resolve().parent
        with tempfile.TemporaryDirectory(prefix="cigeval-track-") as folder:
            report = Path(folder) / f"{result.out.stem}.report.html"
            if self.with_report:
                write_report([result.out], report)
            name = self.run_name or result.out.stem
            tracked = self._open(name, run_config(result, records), "evaluate")
            failed = True
            try:
                figures = run_figures(result, records)
                tracked.log_figures(figures)
                tracked.log_summary({**result.as_dict(), "figures": figures})
                rows = [table_row(r) for r in records]
                images = [
                    image_paths(r, base_dir) if i < self.max_images else {}
                    for i, r in enumerate(records)
                ]
                tracked.log_table(table_columns(), rows, images)
                tracked.log_file(result.out, "results")
                if self.with_report:
                    tracked.log_file(report, "report")
                failed = False
            finally:
                tracked.close(failed)

    def log_probe(self, report: Any, report_path: Path, records_path: Path | None = None) -> None:
        """Log a probe report (``cigeval probe``): its settings, pass rates, the report file
        and the records of the probe samples."""
        config = {
            "judge": report.judge,
            "rubric": report.rubric,
            "cigeval_version": report.cigeval_version,
            "probe_settings": report.settings,
            "eval": report.config,
        }
        tracked = self._open(self.run_name or report_path.stem, config, "probe")
        failed = True
        try:
            tracked.log_figures(probe_figures(report))
            counts = ("pass_rate", "passed", "failed", "errors", "total")
            tracked.log_summary({key: getattr(report, key) for key in counts})
            tracked.log_file(report_path, "probe-report")
            if records_path is not None and records_path.is_file():
                tracked.log_file(records_path, "probe-records")
            failed = False
        finally:
            tracked.close(failed)


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (``eval.grounding.box_threshold``); lists stay values."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def tracker_names() -> Sequence[str]:
    """The trackers ``--track`` and ``track=`` know."""
    return ("wandb", "mlflow")
