"""The flags of commands that print bootstrap intervals, and of those that can print JSON,
written once so every command spells and explains them the same way."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_interval_flags(p: argparse.ArgumentParser, resamples: int, of: str) -> None:
    """``--bootstrap N`` (default ``resamples``, drawn from ``of``), ``--confidence`` and
    ``--seed`` of the percentile bootstrap intervals a command prints."""
    p.add_argument(
        "--bootstrap",
        type=int,
        default=resamples,
        metavar="N",
        help=f"bootstrap resamples of {of} (default: %(default)s)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence level of the intervals (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: %(default)s)")


def add_json_file_flag(p: argparse.ArgumentParser) -> None:
    """``--json FILE``: also write the result as JSON (``-``: print it instead of the table)."""
    p.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="also write the result as JSON to FILE ('-': print the JSON instead of the table)",
    )
