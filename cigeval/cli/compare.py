"""The ``cigeval compare`` command: every generator against a baseline, paired per condition."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cigeval.cli._common import EXIT_OK, UsageError
from cigeval.cli._interval_flags import add_interval_flags, add_json_file_flag
from cigeval.terminal import safe_text


def configure_compare_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``compare``."""
    p.description = (
        "Compare every generator (the records' 'model' field) with a baseline on "
        "the conditions both answered: mean paired difference with a bootstrap interval, "
        "wins/ties/losses, Wilcoxon signed-rank p-value with Holm's correction, per task and "
        "overall; a Bradley-Terry ranking with three or more generators. Records judged with "
        "different settings (run fingerprints) are never paired. See docs/comparisons.md."
    )
    p.add_argument("results", type=Path, nargs="+", help="results JSONL file(s) of `evaluate`")
    p.add_argument(
        "--baseline",
        metavar="GEN",
        help="the generator to beat (default: the generator of the first scored record, as "
        "the report picks it)",
    )
    add_interval_flags(p, 2000, "the conditions")
    add_json_file_flag(p)


def run_compare(args: argparse.Namespace) -> int:
    """The ``compare`` command: the table on stdout, JSON on request."""
    from cigeval.comparisons import compare
    from cigeval.errors import CigevalError

    missing = [str(path) for path in args.results if not path.is_file()]
    if missing:
        raise UsageError(f"results file(s) not found: {', '.join(missing)}")
    try:
        result = compare(
            args.results,
            args.baseline,
            n_boot=args.bootstrap,
            level=args.confidence,
            seed=args.seed,
        )
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    text = json.dumps(result.to_dict(), indent=1)
    if args.json is not None and str(args.json) == "-":
        print(text)
        return EXIT_OK
    print(safe_text(result.table(), lines=True))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return EXIT_OK
