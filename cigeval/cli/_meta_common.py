"""What the ``cigeval meta`` sub-commands share: flag choices, the split flags, diagnostics.

Kept free of pandas so that building the parser stays fast. Data goes to stdout; what a
command wrote, skipped or warns about goes to stderr (:func:`say`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cigeval.errors import InputError
from cigeval.terminal import safe_text

#: The choices of the meta flags (kept here so building the parser imports no pandas).
DIMENSIONS = ("SC", "PQ", "O")
AVERAGINGS = ("paper", "fisher_z")
METHODS = ("spearman", "pearson", "kendall")
SUBSETS = ("train", "test")
SCORE_FORMATS = ("cigeval", "viescore", "autometrics")


def say(text: str) -> None:
    """A diagnostic line on stderr, prefixed once with the command's name."""
    print(f"cigeval meta: {safe_text(text, lines=True)}", file=sys.stderr)


def add_split_options(p: argparse.ArgumentParser) -> None:
    """``--split FILE --subset train|test``, read back by :func:`selected_samples`."""
    p.add_argument(
        "--split",
        type=Path,
        metavar="FILE",
        help="split file: `cigeval meta split` output, or the official format {task: {model: "
        '{"sample": [uids]}}} (test_40p.json: its images are the test side)',
    )
    p.add_argument("--subset", choices=SUBSETS, help="side of --split to keep")


def add_lenient_option(p: argparse.ArgumentParser) -> None:
    """``--lenient``: skip malformed input cells instead of stopping (exit 2)."""
    p.add_argument(
        "--lenient",
        action="store_true",
        help="skip cells that do not hold what their format says (and count them) instead "
        "of stopping with exit 2",
    )


def selected_samples(args: argparse.Namespace) -> Any:
    """The side of ``--split`` chosen with ``--subset`` (None without a split)."""
    from cigeval.meta.split import load_split

    if (args.split is None) != (args.subset is None):
        raise InputError("--split and --subset go together")
    return None if args.split is None else load_split(args.split).subset(args.subset)
