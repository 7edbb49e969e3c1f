"""Weights & Biases: ``--track wandb`` / ``track="wandb"``.

One W&B run per cigeval run: the settings as its config, the figures in its summary, the
records as a W&B Table with the images the judge saw, and the results file, the summary JSON
and the HTML report among its files (the report also as an HTML panel). W&B's own variables
apply (``WANDB_MODE=offline``, ``WANDB_DIR``, ``WANDB_ENTITY``, ``WANDB_API_KEY``).
``wandb`` is an optional extra (``pip install 'cigeval[wandb]'``), imported on use.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.errors import MissingDependency
from cigeval.tracking.base import TrackedRun, Tracker

#: The run's files, by the kind :meth:`TrackedRun.log_file` gets.
FILE_NAMES = {
    "results": "cigeval-results.jsonl",
    "report": "cigeval-report.html",
    "probe-report": "cigeval-probe-report.json",
    "probe-records": "cigeval-probe-records.jsonl",
}


def wandb_sdk() -> ModuleType:
    """The ``wandb`` package, or MissingDependency naming the extra to install."""
    try:
        import wandb
    except ImportError:
        raise MissingDependency(
            "wandb", "wandb", in_callers_words("--track wandb", "track='wandb'")
        ) from None
    return wandb


class WandbTracker(Tracker):
    """Logs runs and probe reports to Weights & Biases (see the module docstring)."""

    name = "wandb"

    def check(self) -> None:
        """The SDK is installed."""
        self._sdk = wandb_sdk()

    def _open(self, name: str, config: dict[str, Any], job: str) -> TrackedRun:
        run = self._sdk.init(
            project=self.project,
            name=name,
            config=config,
            job_type=f"cigeval-{job}",
            reinit="create_new",  # never end or reuse a run the caller has open
            settings=self._sdk.Settings(console="off"),  # leave the caller's stdout alone
        )
        return _WandbRun(self._sdk, run)


class _WandbRun(TrackedRun):
    def __init__(self, sdk: ModuleType, run: Any) -> None:
        self.sdk = sdk
        self.run = run
        self.files = Path(run.dir)  # uploaded with the run (at `wandb sync` when offline)

    def log_figures(self, figures: dict[str, float]) -> None:
        self.run.summary.update(figures)

    def log_summary(self, summary: dict[str, Any]) -> None:
        text = json.dumps(summary, indent=1, sort_keys=True, default=str)
        (self.files / "cigeval-summary.json").write_text(text + "\n", encoding="utf-8")

    def log_table(
        self, columns: list[str], rows: list[list[Any]], images: list[dict[str, Path]]
    ) -> None:
        roles = [r for r in ("output", "source", "mask", "subject", "control") if _any(images, r)]
        table = self.sdk.Table(columns=[*columns, *roles])
        for row, files in zip(rows, images, strict=True):
            cells = [self.sdk.Image(str(files[r])) if r in files else None for r in roles]
            table.add_data(*row, *cells)
        self.run.log({"records": table})

    def log_file(self, path: Path, kind: str) -> None:
        target = self.files / FILE_NAMES.get(kind, path.name)
        shutil.copyfile(path, target)
        if kind == "report":
            self.run.log({"report": self.sdk.Html(target.read_text(encoding="utf-8"))})

    def close(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)


def _any(images: list[dict[str, Path]], role: str) -> bool:
    return any(role in files for files in images)
