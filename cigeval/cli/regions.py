"""The ``cigeval regions`` command: a results file's evidence regions as COCO JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cigeval.cli._common import EXIT_OK, UsageError


def configure_regions_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``regions``."""
    p.description = (
        "Write the evidence regions of a results file (the boxes each sub-question's tools "
        "found, in each image's own pixels) as COCO JSON, for a reviewer's annotation tool: "
        "an image per sample and image role that has regions, an annotation per region (its "
        "sample, sub-question, tool and round as attributes), a category per label. Where "
        "a sample id repeats, its last record counts. See docs/evidence.md."
    )
    p.add_argument("results", type=Path, help="a results JSONL file of `evaluate`")
    p.add_argument(
        "-o",
        "--out",
        type=Path,
        help="the COCO JSON file to write (default: standard output)",
    )


def run_regions(args: argparse.Namespace) -> int:
    """The ``regions`` command."""
    from cigeval.results.coco import coco_regions
    from cigeval.results.run import load_run

    if not args.results.exists():
        raise UsageError(f"results file not found: {args.results}")
    if not args.results.is_file():
        raise UsageError(f"{args.results} is not a regular file (give a results JSONL file)")
    if args.out is not None and args.out.resolve() == args.results.resolve():
        raise UsageError(f"--out {args.out} is the results file itself; name another file")
    run = load_run(args.results)
    export = coco_regions(run.records, base_dir=run.base_dir, source=str(args.results))
    text = json.dumps(export.coco, indent=1)
    if args.out is None:
        sys.stdout.write(text + "\n")
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    where = "standard output" if args.out is None else str(args.out)
    print(
        f"wrote {export.annotations} region(s) on {len(export.coco['images'])} image(s) of "
        f"{len(run.records)} record(s) to {where}",
        file=sys.stderr,
    )
    for skipped_line in run.skipped:
        print(f"skipped {skipped_line}", file=sys.stderr)
    if export.missing_files:
        shown = ", ".join(export.missing_files[:5])
        more = f" and {len(export.missing_files) - 5} more" if len(export.missing_files) > 5 else ""
        print(
            f"{len(export.missing_files)} image(s) without a file to point at ({shown}{more}): "
            "their file_name is the image's sha256; run `evaluate` with an image store or "
            "keep the sample files where they were",
            file=sys.stderr,
        )
    for line in export.skipped:
        print(f"skipped {line}", file=sys.stderr)
    return EXIT_OK
