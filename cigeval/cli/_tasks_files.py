"""``--tasks-file FILE``: tasks of your own, defined in JSON or YAML, for any command."""

from __future__ import annotations

import argparse
from pathlib import Path

from cigeval.cli._common import UsageError
from cigeval.errors import CigevalError


def add_tasks_file_flag(parser: argparse.ArgumentParser) -> None:
    """``--tasks-file FILE`` (repeatable): tasks of your own, defined in JSON or YAML."""
    parser.add_argument(
        "--tasks-file",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="JSON/YAML file defining tasks of your own (repeatable; see docs/tasks.md)",
    )


def load_tasks_files(args: argparse.Namespace) -> None:
    """Register the tasks of every ``--tasks-file``; a bad file is a UsageError."""
    paths = getattr(args, "tasks_file", [])
    if not paths:
        return
    from cigeval.tasks import load_tasks_file

    for path in paths:
        try:
            load_tasks_file(path)
        except CigevalError as exc:
            raise UsageError(str(exc)) from None
