"""The ``cigeval meta`` command: meta-evaluation on ImagenHub, splits, trajectory export.

The meta-evaluation modules (pandas, scipy) are imported when a meta command runs, so the
rest of the command line starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cigeval.cli._common import EXIT_SAMPLE_ERRORS
from cigeval.errors import CigevalError, InputError
from cigeval.rules import AGGREGATE_RULES, COMBINE_RULES

#: The choices of the meta flags (kept here so building the parser imports no pandas).
DIMENSIONS = ("SC", "PQ", "O")
AVERAGINGS = ("paper", "fisher_z")
METHODS = ("spearman", "pearson", "kendall")
SUBSETS = ("train", "test")
DEFAULT_GRID_STEP = 0.1
_MISSING_SHOWN = 10


class _DeprecatedAlias(argparse.Action):
    """A flag kept under its old name: works, and says which name to use."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        print(
            f"cigeval meta: warning: {option} is deprecated; use --average",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def _add_imagenhub(commands: Any) -> None:
    p = commands.add_parser(
        "imagenhub",
        help="correlate scores with the ImagenHub human ratings (paper Table 3)",
        description="Correlate an evaluator's scores (or the human raters themselves) with the "
        "ImagenHub human ratings, per task and generator, and print the paper-style table.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--scores",
        action="append",
        metavar="FILE",
        type=Path,
        help="score file (cigeval results JSONL or VIEScore-style TSV); repeat to combine",
    )
    source.add_argument("--human", action="store_true", help="the human-vs-human baseline")
    p.add_argument(
        "--format",
        choices=("cigeval", "viescore"),
        help="format of every --scores file (default: .tsv -> viescore, else cigeval)",
    )
    p.add_argument(
        "--list-aggregate",
        choices=AGGREGATE_RULES,
        metavar="RULE",
        help="VIEScore-style tables: how each score list becomes the image's score "
        f"(default min, VIEScore's rule; one of {', '.join(AGGREGATE_RULES)})",
    )
    p.add_argument("--dimension", choices=DIMENSIONS, default="SC")
    p.add_argument(
        "--average",
        choices=AVERAGINGS,
        default="paper",
        dest="averaging",
        help="how correlations are averaged over generators and tasks: paper = the published "
        "tanh(mean rho); fisher_z = arctanh, mean, tanh",
    )
    p.add_argument(
        "--aggregate",
        choices=AVERAGINGS,
        dest="averaging",
        action=_DeprecatedAlias,
        help=argparse.SUPPRESS,
    )
    p.add_argument("--method", choices=METHODS, default="spearman")
    p.add_argument(
        "--round",
        type=int,
        metavar="N",
        dest="round_to",
        help="round per-model and per-task values to N decimals before averaging",
    )
    p.add_argument(
        "--combine",
        choices=COMBINE_RULES,
        help="rule combining several --scores per image (needed with two or more)",
    )
    p.add_argument("--trim", type=float, default=0.2, help="trimmed_mean: fraction cut per end")
    p.add_argument(
        "--grid-step",
        type=float,
        default=DEFAULT_GRID_STEP,
        help="majority: grid step on the [0, 1] scale (0.1 = the 0-10 scale)",
    )
    p.add_argument(
        "--missing",
        choices=("cell", "row"),
        default="cell",
        help="an empty score cell makes only its dimension missing (cell) or the image",
    )
    p.add_argument(
        "--nan",
        choices=("propagate", "omit"),
        default="propagate",
        dest="nan_policy",
        help="undefined correlations make the average undefined, or are left out",
    )
    _add_split_options(p)
    p.add_argument(
        "--all-models",
        action="store_true",
        help="also the generators the published tables leave out (Imagic, SuTI)",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        metavar="N",
        help="add N-resample percentile bootstrap intervals",
    )
    p.add_argument("--level", type=float, default=0.95, help="bootstrap interval level")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--label", help="name of the evaluator in the table")
    p.add_argument("--per-model", action="store_true", help="also print per-generator values")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")


def _add_split_options(p: argparse.ArgumentParser) -> None:
    """``--split FILE --subset train|test``, read back by :func:`_samples`."""
    p.add_argument("--split", type=Path, metavar="FILE", help="split file (cigeval meta split)")
    p.add_argument("--subset", choices=SUBSETS, help="side of --split to keep")


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
    _add_split_options(p)
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
    _add_split_options(p)
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
    """Add the ``imagenhub``, ``split`` and ``export-trajectories`` commands to a parser."""
    parser.description = (
        "Meta-evaluation: agreement of evaluators with the ImagenHub human ratings."
    )
    commands = parser.add_subparsers(dest="meta_command", metavar="COMMAND", required=True)
    _add_imagenhub(commands)
    _add_split(commands)
    _add_samples(commands)
    _add_export(commands)
    parser.set_defaults(func=run_meta)


def _samples(args: argparse.Namespace) -> dict[str, list[str]] | None:
    from cigeval.meta.split import load_split

    if (args.split is None) != (args.subset is None):
        raise InputError("--split and --subset go together")
    return None if args.split is None else load_split(args.split).subset(args.subset)


def _run_imagenhub(args: argparse.Namespace) -> int:
    from cigeval.meta import combine_scores, human_baseline, load_scores, meta_evaluate

    samples = _samples(args)
    options = dict(
        dimension=args.dimension,
        method=args.method,
        averaging=args.averaging,
        round_to=args.round_to,
        nan_policy=args.nan_policy,
        samples=samples,
        all_models=args.all_models,
        n_boot=args.bootstrap,
        seed=args.seed,
        level=args.level,
    )
    if args.human:
        result = human_baseline(**options)
    else:
        paths: list[Path] = args.scores
        if len(paths) > 1 and args.combine is None:
            raise InputError("several --scores need --combine RULE (e.g. --combine mean)")
        frames = [load_scores(p, args.format, args.missing, args.list_aggregate) for p in paths]
        names = [p.stem for p in paths]
        skipped = [
            f"{p}: {line}"
            for p, f in zip(paths, frames, strict=True)
            for line in f.attrs.get("skipped_lines", [])
        ]
        if args.combine is not None:
            scores = combine_scores(frames, args.combine, args.trim, args.grid_step)
            label = f"{args.combine}({', '.join(names)})" if len(names) > 1 else names[0]
        else:
            scores, label = frames[0], names[0]
        if args.list_aggregate is not None:
            label += f" [{args.list_aggregate}]"
        result = meta_evaluate(scores, evaluator=args.label or label, **options)
        if skipped:
            result.notes.append(
                f"{len(skipped)} unreadable results line(s) skipped: " + "; ".join(skipped[:5])
            )
        if samples is not None:
            result.notes.append(f"restricted to the {args.subset} side of {args.split}")
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(result.table(per_model=args.per_model))
    return 0


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
    counts = {name: sum(len(u) for u in split.subset(name).values()) for name in SUBSETS}
    print(
        f"wrote {args.out}: {counts['train']} train and {counts['test']} test samples "
        f"(seed {args.seed}, test fraction {args.test_fraction}, stratified by task)",
        file=sys.stderr,
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
        samples=_samples(args),
    )
    if report.written == 0 and report.missing_images:
        raise InputError(
            f"no sample has all its images under {args.museum} "
            f"(e.g. {report.first_missing[0]} is missing): is it the ImagenHub image folder?"
        )
    print(f"wrote {report.written} samples to {args.out}", file=sys.stderr)
    if report.missing_images:
        counts = ", ".join(f"{t} {n}" for t, n in sorted(report.missing_images.items()))
        print(
            f"left out {sum(report.missing_images.values())} samples with a missing image "
            f"({counts}); e.g. {report.first_missing[0]}",
            file=sys.stderr,
        )
    return 0


def _run_export(args: argparse.Namespace) -> int:
    from cigeval.meta.trajectories import export_trajectories
    from cigeval.results import SkippedLine, read_records

    samples = _samples(args)
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
    print(
        f"wrote {report.conversations} conversations from {report.samples} of "
        f"{report.records} records to {args.out}; skipped: {skipped}",
        file=sys.stderr,
    )
    if report.missing_images:
        shown = report.missing_images[:_MISSING_SHOWN]
        print(
            f"cigeval meta: {len(report.missing_images)} image(s) the judge saw could not be "
            "found, so their samples were left out:",
            file=sys.stderr,
        )
        for missing in shown:
            print(f"  {missing}", file=sys.stderr)
        if len(report.missing_images) > len(shown):
            print(f"  ... and {len(report.missing_images) - len(shown)} more", file=sys.stderr)
        return EXIT_SAMPLE_ERRORS
    return 0


def run_meta(args: argparse.Namespace) -> int:
    """Run a parsed ``meta`` command; returns the exit status (2 for unusable input)."""
    handlers = {
        "imagenhub": _run_imagenhub,
        "split": _run_split,
        "imagenhub-samples": _run_samples,
        "export-trajectories": _run_export,
    }
    try:
        return handlers[args.meta_command](args)
    except CigevalError as exc:
        print(f"cigeval meta: error: {exc}", file=sys.stderr)
        return 2
