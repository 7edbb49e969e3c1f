"""Exit statuses, the usage error and the preflight step shared by the ``cigeval`` subcommands."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from cigeval.errors import CigevalError, PreflightError

if TYPE_CHECKING:
    import argparse

    from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
    from cigeval.evaluation import Evaluator

EXIT_OK, EXIT_SAMPLE_ERRORS, EXIT_USAGE = 0, 1, 2
#: A run stopped by Ctrl-C (SIGINT) or by SIGTERM: 128 + the signal number, as shells report.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class UsageError(Exception):
    """Bad command-line usage (exit status 2)."""


def run_preflight(check: Callable[[], list[str]], quiet: bool, label: str = "preflight") -> None:
    """Run ``check`` (e.g. ``Evaluator.preflight``: the judges and tools, before the first
    sample) and print what it checked under ``label``; UsageError (exit 2) on failure."""
    started = time.perf_counter()
    try:
        checks = check()
    except PreflightError as exc:
        raise UsageError(f"preflight failed: {exc}") from None
    if checks and not quiet:
        elapsed = time.perf_counter() - started
        print(f"{label} ({elapsed:.1f} s): {'; '.join(checks)}", file=sys.stderr)


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
