"""``cigeval meta preferences``: a judge's preferences against human ones (GenAI-Bench,
MMRB2, EditReward-Bench layouts, cigeval pairwise results, or a generic JSONL)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cigeval.cli._interval_flags import add_interval_flags, add_json_file_flag
from cigeval.meta.preferences.layouts import LAYOUTS  # light: no numpy, no pandas
from cigeval.terminal import safe_text


def add_preferences_command(commands: Any) -> None:
    """Add ``preferences`` to the ``meta`` sub-commands."""
    p = commands.add_parser(
        "preferences",
        help="accuracy of a judge's preferences against human ones (pairwise benchmarks)",
        description="Score a judge's preferences between candidates against human "
        "preferences: pairwise accuracy with ties (GenAI-Bench) and without (MMRB2), "
        "per-order accuracy where each presentation order was kept (MMRB2), group accuracy "
        "for K = 2, 3, 4 candidates (EditReward-Bench), with bootstrap intervals, per task. "
        "FILE: a pairwise/pointwise results file whose samples carried a human label, a "
        "generic JSONL, or a benchmark's own results layout. See docs/comparisons.md.",
    )
    p.add_argument("file", type=Path, metavar="FILE")
    p.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="auto",
        help="the file's layout (default: detected from the file)",
    )
    p.add_argument(
        "--benchmark",
        type=Path,
        metavar="FILE",
        help="MMRB2: the benchmark file with the human choices (e.g. benchmark/edit.json)",
    )
    p.add_argument("--task", help="the task name of every item (default: the file's own)")
    p.add_argument(
        "--judge",
        metavar="NAME",
        help="genai-bench-votes: the judge whose votes to score (the file holds several)",
    )
    add_interval_flags(p, 1000, "the items")
    add_json_file_flag(p)


def run_preferences(args: argparse.Namespace) -> int:
    """Run ``meta preferences``; CigevalError (exit 2 in ``run_meta``) for unusable input."""
    from cigeval.errors import InputError
    from cigeval.meta.preferences import load_preferences, preference_report

    if not 0 < args.confidence < 1:
        raise InputError(f"--confidence must be between 0 and 1, got {args.confidence}")
    if args.bootstrap < 0:
        raise InputError(f"--bootstrap must be 0 or more, got {args.bootstrap}")
    loaded = load_preferences(
        args.file, args.layout, benchmark=args.benchmark, task=args.task, judge=args.judge
    )
    report = preference_report(
        loaded, str(args.file), n_boot=args.bootstrap, level=args.confidence, seed=args.seed
    )
    text = json.dumps(report.to_dict(), indent=1)
    if args.json is not None and str(args.json) == "-":
        print(text)
        return 0
    print(safe_text(report.table(), lines=True))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
