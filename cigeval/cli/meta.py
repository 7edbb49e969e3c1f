"""The ``cigeval meta`` command: meta-evaluation on ImagenHub, splits, trajectory export.

Each sub-command is one ``_add_<name>`` function (its flags) and one ``_run_<name>`` function
(returns the exit status), listed in :data:`_COMMANDS`; ``imagenhub`` lives in
:mod:`cigeval.cli.meta_imagenhub`. The meta-evaluation modules (pandas, scipy) are imported
when a meta command runs, so the rest of the command line starts fast. Data goes to stdout;
what a command wrote or skipped goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cigeval.cli._common import EXIT_SAMPLE_ERRORS
from cigeval.cli._meta_common import (
    DIMENSIONS,
    SUBSETS,
    add_split_options,
    say,
    selected_samples,
)
from cigeval.cli.meta_imagenhub import add_imagenhub, run_imagenhub
from cigeval.cli.meta_preferences import add_preferences_command, run_preferences
from cigeval.errors import CigevalError, InputError
from cigeval.terminal import safe_text

_MISSING_SHOWN = 10


def _add_split(commands: Any) -> None:
    p = commands.add_parser(
        "split",
        help="write a seeded train/test split of the ImagenHub samples (or your own)",
        description="Split the 1,111 ImagenHub benchmark samples (or those of --from FILE) "
        "into train and test, stratified by task, at the sample level (all generators of a "
        "prompt on one side).",
    )
    p.add_argument("--out", type=Path, required=True, metavar="FILE")
    p.add_argument("--test-fraction", type=float, default=0.4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--from",
        dest="from_file",
        type=Path,
        metavar="FILE",
        help="split the samples of this samples or results JSONL (any dataset: task and "
        "metadata.uid or id of each line) instead of the ImagenHub benchmark",
    )


def _add_samples(commands: Any) -> None:
    p = commands.add_parser(
        "imagenhub-samples",
        help="write cigeval samples for the human-rated ImagenHub images",
        description="Write one cigeval sample per human-rated ImagenHub image (4,801 by default) "
        "from the shipped conditions and a local copy of the ImagenHub image folder, ready for "
        "`cigeval evaluate` and then `cigeval meta imagenhub --scores RESULTS.jsonl`.",
    )
    p.add_argument(
        "--museum",
        type=Path,
        required=True,
        metavar="DIR",
        help="ImagenHub image folder: <task>/input, <task>/token, <task>/<MODEL>",
    )
    p.add_argument("--out", type=Path, required=True, metavar="FILE")
    p.add_argument(
        "--task",
        action="append",
        dest="tasks",
        metavar="TASK_ID",
        help="only this task (repeatable)",
    )
    add_split_options(p)
    p.add_argument(
        "--all-models",
        action="store_true",
        help="include the generators the published tables leave out",
    )
    p.add_argument(
        "--keep-missing",
        action="store_true",
        help="write samples whose images are missing (they end as error records)",
    )


def _add_export(commands: Any) -> None:
    p = commands.add_parser(
        "export-trajectories",
        help="write chat-format fine-tuning data from results traces",
        description="Turn the conversations recorded in a cigeval results file (plan, each "
        "round's tool request, observation with its images, final score) into chat-format "
        "fine-tuning JSONL for `cigeval finetune` or TRL (paper §3.4). Image paths are "
        "absolute unless --relative-images.",
    )
    p.add_argument("results", type=Path, metavar="RESULTS.jsonl")
    p.add_argument("--out", type=Path, required=True, metavar="FILE")
    p.add_argument(
        "--max-diff",
        type=float,
        help="keep samples whose score is within this of the human score on [0, 1] (paper: "
        "0.3); the human score is the record's own `human` field when present, else the "
        "ImagenHub ratings",
    )
    p.add_argument("--dimension", choices=DIMENSIONS, default="SC")
    p.add_argument(
        "--per",
        choices=("call", "sample"),
        default="call",
        help="one conversation per model call (calls continuing a conversation fold into "
        "it) or per sample",
    )
    add_split_options(p)
    p.add_argument(
        "--format",
        choices=("trl", "text"),
        default="trl",
        dest="export_format",
        help="trl: content as lists of image/text parts (TRL SFTTrainer); text: one string "
        "with an <image> placeholder per image (LLaMA-Factory, ms-swift)",
    )
    p.add_argument(
        "--image-dir",
        type=Path,
        metavar="DIR",
        help="folder of the run's images, searched for images a record does not list "
        "(default: RESULTS.images next to the results file, when it exists)",
    )
    p.add_argument(
        "--relative-images",
        action="store_true",
        help="write image paths relative to the output file's folder (default: absolute)",
    )
    p.add_argument(
        "--image-template",
        metavar="TEXT",
        help="write image references built from {sha256}, {label} and {path} instead of file paths",
    )
    p.add_argument(
        "--keep-retried",
        action="store_true",
        help="also keep replies that were unusable and re-asked",
    )


def configure_meta_parser(parser: argparse.ArgumentParser) -> None:
    """Add the meta sub-commands (:data:`_COMMANDS`) to a parser."""
    parser.description = (
        "Meta-evaluation: agreement of evaluators with human ratings (ImagenHub) and with "
        "human preferences (GenAI-Bench, EditReward-Bench, MMRB2)."
    )
    commands = parser.add_subparsers(dest="meta_command", metavar="COMMAND", required=True)
    for add, _ in _COMMANDS.values():
        add(commands)
    parser.set_defaults(func=run_meta)


def _run_split(args: argparse.Namespace) -> int:
    from cigeval.meta.split import make_split, save_split

    samples = None
    if args.from_file is not None:
        from cigeval.meta.split import samples_of_records
        from cigeval.results import read_records

        if not args.from_file.is_file():
            raise InputError(f"cannot read {args.from_file}: no such file")
        samples = samples_of_records(read_records(args.from_file))
        if not samples:
            raise InputError(f"{args.from_file} holds no samples (lines with a task and an id)")
    split = make_split(test_fraction=args.test_fraction, seed=args.seed, samples=samples)
    save_split(split, args.out)
    counts = {name: split.count(name) for name in SUBSETS}
    say(
        f"wrote {args.out}: {counts['train']} train and {counts['test']} test samples "
        f"(seed {args.seed}, test fraction {args.test_fraction}, stratified by task)"
    )
    return 0


def _run_samples(args: argparse.Namespace) -> int:
    from cigeval.meta.imagenhub_samples import write_imagenhub_samples

    if not args.museum.is_dir():
        raise InputError(f"--museum is not a folder: {args.museum}")
    report = write_imagenhub_samples(
        args.museum,
        args.out,
        keep_missing=args.keep_missing,
        tasks=args.tasks,
        all_models=args.all_models,
        samples=selected_samples(args),
    )
    if report.written == 0 and report.missing_images:
        raise InputError(
            f"no sample has all its images under {args.museum} "
            f"(e.g. {report.first_missing[0]} is missing): is it the ImagenHub image folder?"
        )
    say(f"wrote {report.written} samples to {args.out}")
    if report.missing_images:
        counts = ", ".join(f"{t} {n}" for t, n in sorted(report.missing_images.items()))
        say(
            f"left out {sum(report.missing_images.values())} samples with a missing image "
            f"({counts}); e.g. {report.first_missing[0]}"
        )
    return 0


def _run_export(args: argparse.Namespace) -> int:
    from cigeval.meta.trajectories import export_trajectories
    from cigeval.results import SkippedLine, read_records

    samples = selected_samples(args)
    if not args.results.is_file():
        raise InputError(f"cannot read results file {args.results}: no such file")
    image_dir = args.image_dir
    if image_dir is None:
        default = args.results.with_name(args.results.stem + ".images")
        image_dir = default if default.is_dir() else None
    unreadable: list[SkippedLine] = []
    report = export_trajectories(
        read_records(args.results, unreadable),
        args.out,
        per=args.per,
        max_diff=args.max_diff,
        dimension=args.dimension,
        samples=samples,
        image_template=args.image_template,
        keep_retried=args.keep_retried,
        fmt=args.export_format,
        image_dir=image_dir,
        base_dir=args.results.resolve().parent,
        relative_images=args.relative_images,
    )
    if unreadable:
        report.skipped["unreadable line"] += len(unreadable)
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(report.skipped.items())) or "none"
    say(
        f"wrote {report.conversations} conversations from {report.samples} samples "
        f"({report.records} records read) to {args.out}; skipped: {skipped}"
    )
    if report.duplicates:
        say(
            f"{report.duplicates} repeated record(s) of a sample id dropped; the last record "
            "of each id counts"
        )
    if report.missing_images:
        shown = report.missing_images[:_MISSING_SHOWN]
        say(
            f"{len(report.missing_images)} image(s) the judge saw could not be found, so "
            "their samples were left out:"
        )
        for missing in shown:
            print(f"  {safe_text(missing)}", file=sys.stderr)
        if len(report.missing_images) > len(shown):
            print(f"  ... and {len(report.missing_images) - len(shown)} more", file=sys.stderr)
        return EXIT_SAMPLE_ERRORS
    if report.conversations == 0:
        say(f"error: nothing to train on: {_why_empty(report, args)}")
        return EXIT_SAMPLE_ERRORS
    return 0


def _why_empty(report: Any, args: argparse.Namespace) -> str:
    """Why an export wrote no conversation, in words a user can act on."""
    if report.records == 0:
        return f"{args.results} holds no readable results record"
    reasons = report.skipped.most_common()
    if not reasons:
        return "no record had model calls to export"
    main = reasons[0][0]
    hints = {
        "status not ok": "every sample ended in an error; rerun them (cigeval evaluate "
        "--retry-errors)",
        "not in the chosen split": f"no sample is on the {args.subset} side of {args.split}",
        "too far from the human score": f"no score is within --max-diff {args.max_diff} of "
        "the human score",
        "no human rating": "the records carry no `human` field and are not ImagenHub samples",
        "no model calls in the trace": "the records hold no model calls (written without traces?)",
    }
    detail = ", ".join(f"{n} {why}" for why, n in reasons)
    return f"all {report.records} records were skipped ({detail}): {hints.get(main, main)}"


#: Sub-command name -> (the function adding its parser, the function running it).
_COMMANDS: dict[str, tuple[Any, Any]] = {
    "imagenhub": (add_imagenhub, run_imagenhub),
    "split": (_add_split, _run_split),
    "imagenhub-samples": (_add_samples, _run_samples),
    "export-trajectories": (_add_export, _run_export),
    "preferences": (add_preferences_command, run_preferences),
}


def run_meta(args: argparse.Namespace) -> int:
    """Run a parsed ``meta`` command; returns the exit status (2 for unusable input)."""
    try:
        return int(_COMMANDS[args.meta_command][1](args))
    except CigevalError as exc:
        say(f"error: {exc}")
        return 2
