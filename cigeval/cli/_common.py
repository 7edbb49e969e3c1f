"""Exit statuses, the usage error and the preflight step shared by the ``cigeval`` subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cigeval.errors import CigevalError, PreflightError
from cigeval.runs.preflight import preflight_step
from cigeval.runs.status import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SAMPLE_ERRORS,
    EXIT_TERMINATED,
    EXIT_USAGE,
)

if TYPE_CHECKING:
    from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
    from cigeval.evaluation import Evaluator

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SAMPLE_ERRORS",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "UsageError",
    "add_calibration",
    "add_calibration_flags",
    "make_evaluator",
    "run_preflight",
]


class UsageError(Exception):
    """Bad command-line usage (exit status 2)."""


def run_preflight(check: Callable[[], list[str]], quiet: bool, label: str = "preflight") -> None:
    """Run ``check`` (e.g. ``Evaluator.preflight``: the judges and tools, before the first
    sample) and print what it checked under ``label``; UsageError (exit 2) on failure."""
    try:
        preflight_step(check, quiet, label)
    except PreflightError as exc:
        raise UsageError(f"preflight failed: {exc}") from None


def make_evaluator(
    args: argparse.Namespace, config: EvalConfig, run_config: RunConfig, ensemble: EnsembleConfig
) -> Evaluator:
    """The Evaluator of ``--model``/``--base-url`` with the parsed settings; UsageError if bad."""
    from cigeval.evaluation import Evaluator

    try:
        evaluator = Evaluator(
            args.model,
            config=config,
            run_config=run_config,
            base_url=args.base_url,
            ensemble=ensemble,
        )
        add_calibration(args, evaluator)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    return evaluator


def add_calibration_flags(group: argparse._ActionsContainer) -> None:
    """``--calibration FILE`` and ``--abstain-width W`` (docs/calibration.md), added to a
    parser or one of its groups."""
    group.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="a file written by cigeval calibrate (docs/calibration.md): every scored record "
        "also gets its calibrated value and interval; refused when fitted for another judge, "
        "rubric or prompt set",
    )
    group.add_argument(
        "--abstain-width",
        type=float,
        metavar="W",
        help="with --calibration: mark items whose interval is wider than W (abstain)",
    )


def add_calibration(args: argparse.Namespace, evaluator: Evaluator) -> None:
    """Apply ``--calibration`` to ``evaluator`` (CalibrationMismatch when it does not fit)."""
    path = getattr(args, "calibration", None)
    if path is not None:
        evaluator.use_calibration(path, getattr(args, "abstain_width", None))
    elif getattr(args, "abstain_width", None) is not None:
        raise UsageError("--abstain-width needs --calibration")
