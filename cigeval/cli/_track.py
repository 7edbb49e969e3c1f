"""``--track wandb|mlflow``: log a run (or a probe report) to an experiment tracker
(docs/tracking.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval.cli._common import UsageError
from cigeval.errors import CigevalError
from cigeval.terminal import safe_text

if TYPE_CHECKING:
    from cigeval.tracking import Tracker


def add_track_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of experiment tracking."""
    group = parser.add_argument_group("experiment tracking (docs/tracking.md)")
    group.add_argument(
        "--track",
        action="append",
        choices=("wandb", "mlflow"),
        help="log the run to Weights & Biases or MLflow when it ends (repeatable); their own "
        "variables apply (WANDB_MODE, WANDB_DIR, MLFLOW_TRACKING_URI, ...)",
    )
    group.add_argument(
        "--track-project",
        metavar="NAME",
        help="the W&B project or MLflow experiment (default: cigeval)",
    )
    group.add_argument(
        "--track-name", metavar="NAME", help="the tracker run's name (default: the --out name)"
    )


def trackers_from_args(args: argparse.Namespace) -> list[Tracker]:
    """The trackers ``--track`` names, checked before the run (UsageError, exit 2, when one
    cannot be used: its SDK missing, its store refusing)."""
    if not args.track:
        if args.track_project or args.track_name:
            raise UsageError("--track-project and --track-name apply to --track only")
        return []
    from cigeval.tracking import make_tracker

    options: dict[str, Any] = {"project": args.track_project, "run_name": args.track_name}
    try:
        return [make_tracker(name, **options) for name in dict.fromkeys(args.track)]
    except CigevalError as exc:
        raise UsageError(str(exc)) from None


def log_probe(trackers: list[Tracker], report: Any, report_path: Path) -> None:
    """Log a probe report to each tracker; a failure is printed, never fatal (the report is
    written already)."""
    records = Path(report.records) if report.records else None
    for tracker in trackers:
        try:
            tracker.log_probe(report, report_path, records)
        except Exception as exc:
            print(
                f"cigeval probe: warning: logging the probe report to {tracker.name} failed: "
                f"{type(exc).__name__}: {safe_text(exc)}",
                file=sys.stderr,
            )
