"""The ``cigeval calibrate`` command: learn from human labels, write a calibration file.

Three sources of labels, one sub-command each (docs/calibration.md):

- ``votes FILE``: pairwise votes of several judges with the human vote (GenAI-Bench's
  layout); a four-way jury against the best single judge over seeded splits;
- ``imagenhub --scores FILE ...``: stored judge outputs against the ImagenHub raters, on the
  official split (``--split test_40p.json``) or seeded k-fold;
- ``labels --scores RESULTS.jsonl --labels LABELS.csv``: your own results and ratings.

The figures go to stdout (``--json``: one JSON object ``{"heldout": ...}``); what was written
and every note to stderr. scikit-learn (the ``calibrate`` extra) is imported when a
sub-command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cigeval.cli._common import EXIT_OK, UsageError
from cigeval.meta.calibrate.steps import STEPS  # light: imports nothing
from cigeval.terminal import safe_text


def _say(text: str) -> None:
    print(f"cigeval calibrate: {safe_text(text, lines=True)}", file=sys.stderr)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object {heldout: ...}")
    p.add_argument(
        "-o", "--out", type=Path, metavar="CAL.json", help="write the calibration file here"
    )
    p.add_argument(
        "--predictions",
        type=Path,
        metavar="OUT.jsonl",
        help="write one JSON line per held-out prediction (the figures can be recomputed)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the splits and the bootstrap")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="bootstrap resamples behind every interval (95%%)",
    )


def _score_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--level", type=float, default=0.9, help="nominal coverage of the intervals (0.9)"
    )
    p.add_argument(
        "--folds",
        type=int,
        default=5,
        help="k of the seeded k-fold split grouped by prompt (when there is no --split)",
    )
    p.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=STEPS,
        metavar="STEP",
        help=f"do not try a learned step (repeatable): {', '.join(STEPS)}",
    )
    p.add_argument(
        "--abstain-width",
        type=float,
        metavar="W",
        help="mark calibrated scores whose interval is wider than W (``abstain``)",
    )


def configure_calibrate_parser(parser: argparse.ArgumentParser) -> None:
    """The ``calibrate`` sub-commands and their flags."""
    parser.description = (
        "Learn from human labels how a judge's scores relate to people's: learned "
        "aggregation, a jury of judges, a monotone map with conformal intervals, a tie band. "
        "Each step is kept only when its held-out gain's bootstrap interval lies above zero. "
        "Writes a calibration file for `evaluate`, `serve` and `report --calibration`."
    )
    commands = parser.add_subparsers(dest="calibrate_command", metavar="COMMAND", required=True)
    votes = commands.add_parser(
        "votes",
        help="a four-way jury of pairwise judges (GenAI-Bench-style votes)",
        description="Pairwise votes of several judges with the human vote per pair (one JSON "
        "object per line: idx, the text condition, human_vote, votes). Over seeded splits "
        "grouped by text condition: the best single judge (chosen on the train side) and the "
        "learned jury, counted on the held-out side (GenAI-Bench's four-way accuracy).",
    )
    votes.add_argument("file", type=Path, metavar="FILE")
    votes.add_argument("--splits", type=int, default=10, help="seeded train/held-out splits")
    votes.add_argument(
        "--test-fraction", type=float, default=0.4, help="share of prompts held out (0.4)"
    )
    votes.add_argument(
        "--judge", action="append", metavar="NAME", help="only these judges (repeatable)"
    )
    _common(votes)
    imagenhub = commands.add_parser(
        "imagenhub",
        help="stored judge outputs against the ImagenHub raters",
        description="Judge outputs (VIEScore-style tables or cigeval results files; several "
        "make a jury) against the ImagenHub human ratings (the raters' mean, as `meta` reads "
        "it), on the official split when --split is given, else seeded k-fold grouped by "
        "benchmark sample.",
    )
    imagenhub.add_argument(
        "--scores",
        action="append",
        type=Path,
        required=True,
        metavar="FILE",
        help="a judge's outputs (.tsv: VIEScore-style table; else cigeval results); repeat "
        "for several judges (the first is the one whose win/tie/loss agreement is reported)",
    )
    imagenhub.add_argument(
        "--split",
        type=Path,
        metavar="FILE",
        help="the official test_40p.json (or a `cigeval meta split` file)",
    )
    imagenhub.add_argument("--dimension", choices=("SC", "PQ"), default="SC")
    imagenhub.add_argument(
        "--human-ratings",
        type=Path,
        metavar="DIR",
        help="rating files laid out as the shipped ones, instead of the shipped ratings",
    )
    imagenhub.add_argument(
        "--all-models",
        action="store_true",
        help="also the generators the published tables leave out (Imagic, SuTI)",
    )
    imagenhub.add_argument(
        "--lenient",
        action="store_true",
        help="leave malformed table cells out (counted) instead of stopping",
    )
    _score_flags(imagenhub)
    _common(imagenhub)
    labels = commands.add_parser(
        "labels",
        help="your own results file(s) and a CSV of id,rating (or id_a,id_b,preference)",
        description="A cigeval results file (several: a jury of judges of the same samples) "
        "and a CSV with a header 'id,rating' (any numeric scale), over seeded k-fold splits "
        "grouped by prompt (metadata.uid, else the text conditions, else the id). A CSV with "
        "a header 'id_a,id_b,preference' (A, B or tie per pair of record ids) learns the "
        "judge's tie band instead.",
    )
    labels.add_argument(
        "--scores", action="append", type=Path, required=True, metavar="RESULTS.jsonl"
    )
    labels.add_argument("--labels", type=Path, required=True, metavar="LABELS.csv")
    labels.add_argument(
        "--group-by",
        metavar="FIELD",
        help="the record field (dotted, e.g. metadata.prompt_id) whose equal values make a "
        "prompt group",
    )
    _score_flags(labels)
    _common(labels)


def _run(args: argparse.Namespace) -> Any:
    from cigeval.meta.calibrate import calibrate_imagenhub, calibrate_labels, calibrate_votes

    common = {"seed": args.seed, "n_boot": args.bootstrap}
    if args.calibrate_command == "votes":
        return calibrate_votes(
            args.file,
            splits=args.splits,
            test_fraction=args.test_fraction,
            judges=args.judge,
            **common,
        )
    scored = {
        "level": args.level,
        "folds": args.folds,
        "skip": args.skip,
        "abstain_width": args.abstain_width,
        **common,
    }
    if args.calibrate_command == "imagenhub":
        return calibrate_imagenhub(
            args.scores,
            args.split,
            dimension=args.dimension,
            all_models=args.all_models,
            ratings_dir=args.human_ratings,
            lenient=args.lenient,
            **scored,
        )
    return calibrate_labels(args.scores, args.labels, group_by=args.group_by, **scored)


def run_calibrate(args: argparse.Namespace) -> int:
    """Run a ``calibrate`` sub-command; exit 0, or 2 for unusable input."""
    from cigeval.errors import CigevalError

    if args.bootstrap < 0:
        raise UsageError("--bootstrap must be 0 or more")
    try:
        result = _run(args)
        for note in result.notes:
            _say(note)
        if args.out is not None:
            result.calibration.save(args.out)
            _say(f"wrote {args.out}")
        if args.predictions is not None:
            result.write_predictions(args.predictions)
            _say(f"wrote {len(result.predictions)} prediction(s) to {args.predictions}")
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(safe_text(result.summary(), lines=True))
    return EXIT_OK
