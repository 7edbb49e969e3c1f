"""Exit statuses, the usage error and the preflight step shared by the ``cigeval`` subcommands."""

from __future__ import annotations

from collections.abc import Callable
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
    import argparse

    from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
    from cigeval.evaluation import Evaluator

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SAMPLE_ERRORS",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "UsageError",
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
        return Evaluator(
            args.model,
            config=config,
            run_config=run_config,
            base_url=args.base_url,
            ensemble=ensemble,
        )
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
