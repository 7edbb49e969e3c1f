"""The ``cigeval report`` command: one self-contained HTML page of one or more results files."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cigeval.cli._common import EXIT_OK, UsageError
from cigeval.cli._interval_flags import add_interval_flags


def configure_report_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``report``."""
    p.description = (
        "Read results files (one per judge; samples matched by id) and write one "
        "HTML page that opens from disk with no network: a leaderboard per generator and task "
        "with bootstrap intervals, the correlation with human ratings when records carry "
        "them, the agreement between judges, score plots, the run's provenance, and one "
        "card per sample, filterable and sortable. Unreadable lines and missing images are "
        "listed in the page. See docs/report.md."
    )
    p.add_argument("results", type=Path, nargs="+", help="results JSONL file(s) of `evaluate`")
    p.add_argument("-o", "--out", type=Path, required=True, help="the HTML file to write")
    add_interval_flags(p, 1000, "the samples")
    p.add_argument(
        "--thumbnail-size",
        type=int,
        default=192,
        metavar="PX",
        help="longest side of the embedded thumbnails (default: %(default)s)",
    )
    p.add_argument(
        "--no-thumbnail-cache",
        dest="thumbnail_cache",
        action="store_false",
        help="make every thumbnail anew, without reading or filling the thumbnail cache "
        "($CIGEVAL_CACHE_DIR/thumbnails; see docs/report.md)",
    )
    p.add_argument("--title", default="cigeval report", help="the page's title")
    p.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="a file written by cigeval calibrate: show each score's calibrated value and "
        "interval, and each generator's mean calibrated value (records already calibrated "
        "keep theirs)",
    )
    p.add_argument(
        "--group-by",
        metavar="FIELD",
        help="leaderboard columns by this sample field or metadata key instead of the task "
        "(category, seed, model, metadata.tag; see docs/report.md)",
    )
    p.add_argument(
        "--baseline",
        metavar="GEN",
        help="the generator the Compare section pairs the others with (default: the first "
        "generator in the files; see docs/comparisons.md)",
    )


def run_report(args: argparse.Namespace) -> int:
    """The ``report`` command."""
    from cigeval.errors import CigevalError
    from cigeval.report import build_report

    missing = [str(path) for path in args.results if not path.exists()]
    if missing:
        raise UsageError(f"results file(s) not found: {', '.join(missing)}")
    for path in args.results:
        if not path.is_file():
            raise UsageError(f"{path} is not a regular file (give a results JSONL file)")
    if not 0 < args.confidence < 1:
        raise UsageError(f"--confidence must be between 0 and 1, got {args.confidence}")
    if args.bootstrap < 0:
        raise UsageError(f"--bootstrap must be 0 or more, got {args.bootstrap}")
    if args.thumbnail_size < 16:
        raise UsageError(f"--thumbnail-size must be at least 16, got {args.thumbnail_size}")
    from cigeval.report.output import refuse_output_over_inputs

    try:  # before anything is read (again when the page is written)
        refuse_output_over_inputs(args.out, [("results file", path) for path in args.results])
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    started = time.perf_counter()
    try:
        report = build_report(
            args.results,
            n_boot=args.bootstrap,
            level=args.confidence,
            seed=args.seed,
            thumbnail_side=args.thumbnail_size,
            title=args.title,
            baseline=args.baseline,
            thumbnail_cache=args.thumbnail_cache,
            group_by=args.group_by,
            calibration=args.calibration,
        )
    except CigevalError as exc:  # a calibration file that does not fit the records
        raise UsageError(str(exc)) from None
    try:
        path = report.write(args.out)
    except CigevalError as exc:  # a path that is an input, a folder that cannot be written
        raise UsageError(str(exc)) from None
    samples = len({str(r["id"]) for run in report.runs for r in run.records})
    skipped = sum(len(run.skipped) for run in report.runs)
    size = path.stat().st_size / 1e6
    print(
        f"wrote {path} ({size:.1f} MB, {samples} samples, {len(report.runs)} run(s), "
        f"{len(report.catalog.thumbnails)} images) in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    if skipped or report.catalog.missing:
        print(
            f"listed in the page: {skipped} unreadable line(s), "
            f"{len(report.catalog.missing)} missing image use(s)",
            file=sys.stderr,
        )
    return EXIT_OK
