"""``cigeval meta imagenhub``: correlate evaluators (or the raters) with the ImagenHub ratings.

One row per evaluator: the human raters; an automatic metric (each metric of a metric table);
each score file given (a judge to compare with the others), and each run of a cigeval results
file (records of different run fingerprints are never pooled); or, with ``--combine``, one row
of several score files combined per image.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval.cli._meta_common import (
    AVERAGINGS,
    DIMENSIONS,
    METHODS,
    SCORE_FORMATS,
    add_lenient_option,
    add_split_options,
    say,
    selected_samples,
)
from cigeval.errors import InputError
from cigeval.rules import AGGREGATE_RULES, COMBINE_RULES

if TYPE_CHECKING:
    import pandas as pd

    from cigeval.meta import MetaResult

DEFAULT_GRID_STEP = 0.1


class _DeprecatedAlias(argparse.Action):
    """A flag kept under its old name: works, and says which name to use."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        say(f"warning: {option} is deprecated; use --average")
        setattr(namespace, self.dest, values)


def _rounding(text: str) -> int | str | None:
    """``--round``: a number of decimals, ``none``, or ``auto``."""
    if text in ("auto", "none"):
        return None if text == "none" else "auto"
    if re.fullmatch(r"\d+", text):
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a number of decimals, 'none' or 'auto': {text!r}")


def add_imagenhub(commands: Any) -> None:
    """Register ``meta imagenhub``."""
    p = commands.add_parser(
        "imagenhub",
        help="correlate scores with the ImagenHub human ratings (paper Table 1)",
        description="Correlate an evaluator's scores (or the human raters themselves) with the "
        "ImagenHub human ratings, per task and generator, and print the paper-style table.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--scores",
        action="append",
        metavar="FILE",
        type=Path,
        help="score file (cigeval results JSONL, VIEScore-style TSV or metric TSV); repeat "
        "for one row per file (judges side by side), or combine them with --combine",
    )
    source.add_argument("--human", action="store_true", help="the human-vs-human baseline")
    p.add_argument(
        "--format",
        choices=SCORE_FORMATS,
        help="format of every --scores file (default: .tsv -> viescore, else cigeval); "
        "autometrics: columns task, model, uid, metric, value, one row per metric",
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
        "tanh(mean rho), with the published rounding; fisher_z = arctanh, mean, tanh",
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
        type=_rounding,
        default="auto",
        metavar="N|none",
        dest="round_to",
        help="keep N decimals of every correlation and average before the next step, or none "
        "(default: with --average paper the published tables' 4 decimals, else none)",
    )
    p.add_argument(
        "--combine",
        choices=COMBINE_RULES,
        help="combine several --scores per image with RULE into one row (default: one row "
        "per file)",
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
    add_split_options(p)
    add_lenient_option(p)
    p.add_argument(
        "--human-ratings",
        type=Path,
        metavar="DIR",
        help="rating files laid out as the shipped ones (ImagenHub_<Task>/*_rater<N>.tsv) "
        "instead of the ratings shipped with cigeval",
    )
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
    p.add_argument(
        "--label", help="name of the evaluator in the table (one --scores, or --combine)"
    )
    p.add_argument("--per-model", action="store_true", help="also print per-generator values")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")


def _file_notes(path: Path, frame: pd.DataFrame) -> list[str]:
    """What loading ``path`` left out, as notes (also said on stderr)."""
    from cigeval.meta.cells import skipped_note

    notes = []
    lines = frame.attrs.get("skipped_lines") or []
    if lines:
        notes.append(
            f"{len(lines)} unreadable results line(s) skipped in {path}: " + "; ".join(lines[:5])
        )
    dropped = frame.attrs.get("duplicates_dropped", 0)
    if dropped:
        ids = frame.attrs.get("duplicate_ids", [])
        notes.append(
            f"{dropped} repeated record(s) of {len(ids)} sample id(s) in {path} dropped; the "
            f"last record of each id counts (e.g. {ids[0]})"
        )
    notes.extend(skipped_note(frame.attrs.get("skipped_cells") or []))
    for note in notes:
        say(note)
    return notes


def _run_rows(path: Path, frame: pd.DataFrame, label: str) -> list[tuple[str, pd.DataFrame]]:
    """One (label, frame) per run fingerprint of a cigeval results frame."""
    from cigeval.meta import split_runs
    from cigeval.results.fingerprint import differing_settings

    runs = split_runs(frame)
    if len(runs) == 1:
        return [(label, runs[0][1])]
    settings = frame.attrs.get("run_settings", {})
    first = settings.get(runs[0][0], {})
    differ = sorted(
        {name for fp, _ in runs[1:] for name in differing_settings(first, settings.get(fp, {}))}
    )
    say(
        f"{path} holds records of {len(runs)} runs with different settings"
        + (f" ({', '.join(differ[:6])})" if differ else "")
        + ": one row per run, never pooled"
    )
    return [(f"{label} [{fp}]", part) for fp, part in runs]


def _autometric_results(args: argparse.Namespace, options: dict[str, Any]) -> list[MetaResult]:
    from cigeval.meta import load_autometrics, meta_evaluate
    from cigeval.meta.autometrics import metric_tasks

    if len(args.scores) != 1 or args.combine is not None:
        raise InputError("--format autometrics takes one metric table, without --combine")
    if args.dimension != "SC":
        raise InputError("automatic metrics are correlated with the human SC ratings only")
    path = args.scores[0]
    results = []
    for name, frame in load_autometrics(path, lenient=args.lenient).items():
        notes = _file_notes(path, frame)
        label = f"{args.label}: {name}" if args.label else name
        result = meta_evaluate(frame, evaluator=label, tasks=metric_tasks(frame), **options)
        result.notes.extend(notes)
        results.append(result)
    return results


def _evaluator_results(args: argparse.Namespace, options: dict[str, Any]) -> list[MetaResult]:
    from cigeval.meta import combine_scores, load_scores, meta_evaluate
    from cigeval.meta.scores import guess_format

    paths: list[Path] = args.scores
    formats = [args.format or guess_format(p) for p in paths]
    if "autometrics" in formats:
        return _autometric_results(args, options)
    if len(paths) > 1 and args.combine is None and args.label is not None:
        raise InputError(
            "--label names one row: give it with one --scores, or with --combine RULE "
            "(several --scores without --combine are one row each, named after their files)"
        )
    frames = [
        load_scores(p, f, args.missing, args.list_aggregate, args.lenient)
        for p, f in zip(paths, formats, strict=True)
    ]
    names = _row_names(paths)
    suffix = f" [{args.list_aggregate}]" if args.list_aggregate is not None else ""
    results = []
    if args.combine is not None:
        notes = [note for p, f in zip(paths, frames, strict=True) for note in _file_notes(p, f)]
        scores = combine_scores(frames, args.combine, args.trim, args.grid_step)
        label = f"{args.combine}({', '.join(names)})" if len(names) > 1 else names[0]
        result = meta_evaluate(scores, evaluator=args.label or label + suffix, **options)
        result.notes.extend(notes)
        return [result]
    for path, frame, name in zip(paths, frames, names, strict=True):
        notes = _file_notes(path, frame)  # each row says what its own file left out
        for label, scores in _run_rows(path, frame, args.label or name + suffix):
            result = meta_evaluate(scores, evaluator=label, **options)
            result.notes.extend(notes)
            if frame.attrs.get("source_format") == "cigeval":
                result.reliability = _reliability(path, result.fingerprint)
            results.append(result)
    return results


def _reliability(path: Path, fingerprint: str | None) -> Any:
    """The repeated-judgement reliability of one run of a results file (None without
    several judgements per record)."""
    from cigeval.meta.reliability import repeated_judgements
    from cigeval.results import last_record_per_id, read_records
    from cigeval.results.fingerprint import fingerprint_of

    records = last_record_per_id(read_records(path))
    if fingerprint is not None:
        records = [r for r in records if fingerprint_of(r) == fingerprint]
    return repeated_judgements(records)


def _row_names(paths: list[Path]) -> list[str]:
    """A row name per score file: its name without the suffix, or the path as given where two
    files share that name."""
    stems = [p.stem for p in paths]
    return [str(p) if stems.count(p.stem) > 1 else p.stem for p in paths]


def run_imagenhub(args: argparse.Namespace) -> int:
    """Run ``meta imagenhub``: print the table (or JSON) on stdout; 0 when it printed."""
    from cigeval.meta import human_baseline, load_human_ratings, rows_table, rows_to_dict
    from cigeval.meta.cells import skipped_note

    samples = selected_samples(args)
    options: dict[str, Any] = dict(
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
        result = human_baseline(**options, ratings_dir=args.human_ratings, lenient=args.lenient)
        for note in result.notes[1:]:
            say(note)
        results = [result]
    else:
        human_notes = []
        if args.human_ratings is not None or args.lenient:
            human = load_human_ratings(
                args.all_models, ratings_dir=args.human_ratings, lenient=args.lenient
            )
            human_notes = skipped_note(human.attrs.get("skipped_cells") or [])
            for note in human_notes:
                say(f"human ratings: {note}")
            options["human"] = human
        results = _evaluator_results(args, options)
        for result in results:
            result.notes.extend(f"human ratings: {note}" for note in human_notes)
    if samples is not None:
        for result in results:
            result.notes.append(f"restricted to the {args.subset} side of {args.split}")
    if args.json:
        print(json.dumps(rows_to_dict(results), indent=1))
    else:
        print(rows_table(results, per_model=args.per_model))
    return 0
