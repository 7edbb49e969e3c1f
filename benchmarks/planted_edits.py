"""Does Difference (or Grounding) find the planted edits under an editor's noise?

    python benchmarks/planted_edits.py [--pairs 600] [--seed 0] [--size 512] [--jobs 2]
        [--tools paper extended extended-robust paper-robust] [--grounding CHECKPOINT|tiny]
        [--write DIR] [--json FILE]

Draws pairs 0 to ``--pairs - 1`` of the planted-edit set of ``--seed``
(:mod:`cigeval.planted_edits`, docs/planted-edits.md), runs each tool on every pair (source
against the editor's output, no mask) and prints the localisation figures of
:mod:`cigeval.planted_edits.scoring`: requested edits whose best box reaches IoU >= 0.5 (per
kind of edit), unrequested changes found, failed (re-rendered, unedited) pairs marked edited
and the share of their picture boxed, over-editing and failed-edit detection (precision,
recall, F1), regenerated pictures called a whole-image change.

Tools: ``paper`` (Difference as the official code), ``extended`` (cigeval's steps),
``extended-robust`` (``--diff-robust``), ``paper-robust`` (the official steps on the robust
change map). ``--grounding CHECKPOINT`` adds Grounding with that GroundingDINO checkpoint,
each edit's target phrase as the query (``tiny``: a tiny random model, which runs the code
path only: its figures mean nothing). ``--write DIR`` also writes the set as files.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cigeval.planted_edits import planted_pair, write_planted_set  # noqa: E402
from cigeval.planted_edits.scoring import (  # noqa: E402
    Localisation,
    Locator,
    PairOutcome,
    difference_locator,
    grounding_locator,
    score_pair,
)
from cigeval.tools.settings import DifferenceConfig, GroundingConfig  # noqa: E402

#: The Difference settings of each tool name.
DIFFERENCE_TOOLS = {
    "paper": {"preset": "official"},
    "extended": {"preset": "cigeval"},
    "extended-robust": {"preset": "cigeval", "robust": True},
    "paper-robust": {"preset": "official", "robust": True},
}


def _locators(tools: list[str], grounding: str | None) -> dict[str, Locator]:
    locators = {
        name: difference_locator(DifferenceConfig(**DIFFERENCE_TOOLS[name])) for name in tools
    }
    if grounding:
        config = GroundingConfig(checkpoint=grounding, device="cpu")
        locators["grounding"] = grounding_locator(config)
    return locators


def _score_chunk(
    seed: int, indices: list[int], size: int, tools: list[str], grounding: str | None
) -> tuple[dict[str, list[PairOutcome]], dict[str, float]]:
    """Draw and score pairs ``indices``; the outcomes and the seconds spent per tool."""
    locators = _locators(tools, grounding)
    outcomes: dict[str, list[PairOutcome]] = {name: [] for name in locators}
    seconds = {name: 0.0 for name in ["(drawing)", *locators]}
    for index in indices:
        started = time.perf_counter()
        pair = planted_pair(seed, index, size=size)
        seconds["(drawing)"] += time.perf_counter() - started
        for name, locate in locators.items():
            started = time.perf_counter()
            found = locate(pair)
            seconds[name] += time.perf_counter() - started
            outcomes[name].append(score_pair(pair, found))
    return outcomes, seconds


def _tiny_grounding(folder: Path) -> str:
    from tests.tiny_grounding import build_tiny_grounding_dino

    build_tiny_grounding_dino(folder)
    return str(folder)


def _percent(value: float) -> str:
    return "   n/a" if value != value else f"{100 * value:5.1f}%"


def _table(results: dict[str, Localisation], seconds: dict[str, float], pairs: int) -> str:
    lines = [
        f"{'tool':<16} {'edits':>7} {'unreq':>7} {'unedit':>7} {'area':>7} "
        f"{'over P':>7} {'over R':>7} {'over F1':>7} {'fail F1':>7} {'whole':>7} {'ms/pair':>8}"
    ]
    for name, loc in results.items():
        over, failed = loc.over_editing, loc.failed_edits
        change_tool = name != "grounding"
        lines.append(
            f"{name:<16} {_percent(loc.edits_found):>7} {_percent(loc.over_edits_found):>7} "
            + (
                f"{_percent(loc.unedited_marked):>7} {_percent(loc.false_alarm_area):>7} "
                f"{_percent(over.precision):>7} {_percent(over.recall):>7} "
                f"{_percent(over.f1):>7} {_percent(failed.f1):>7} "
                f"{_percent(loc.whole_image_found):>7} "
                if change_tool
                else f"{'n/a':>7} " * 7
            )
            + f"{1000 * seconds[name] / pairs:8.0f}"
        )
    lines.append("")
    kinds = sorted({k for loc in results.values() for k in loc.edits_found_by_kind()})
    lines.append(f"{'edits found by kind':<16} " + " ".join(f"{k:>10}" for k in kinds))
    for name, loc in results.items():
        by_kind = loc.edits_found_by_kind()
        cells = [f"{_percent(by_kind[k][0]):>10}" if k in by_kind else f"{'':>10}" for k in kinds]
        lines.append(f"{name:<16} " + " ".join(cells))
    counts = next(iter(results.values())).edits_found_by_kind()
    lines.append(f"{'(edits)':<16} " + " ".join(f"{counts[k][1]:>10}" for k in kinds))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=512, help="side of every picture, pixels")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument(
        "--tools", nargs="+", default=list(DIFFERENCE_TOOLS), choices=list(DIFFERENCE_TOOLS)
    )
    parser.add_argument("--grounding", help="a GroundingDINO checkpoint, or 'tiny'")
    parser.add_argument("--write", type=Path, help="also write the set as files here")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()

    grounding = args.grounding
    if grounding == "tiny":
        grounding = _tiny_grounding(Path(tempfile.mkdtemp(prefix="tiny-grounding-")))
    if args.write:
        started = time.perf_counter()
        write_planted_set(args.write, args.pairs, args.seed, size=args.size)
        print(f"wrote the set to {args.write} in {time.perf_counter() - started:.0f} s")

    indices = list(range(args.pairs))
    chunks = [indices[i :: args.jobs] for i in range(args.jobs)]
    started = time.perf_counter()
    # spawn, not fork: torch (Grounding) in the parent leaves its thread pools locked in forks
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        parts = list(
            pool.map(
                _score_chunk,
                [args.seed] * args.jobs,
                chunks,
                [args.size] * args.jobs,
                [args.tools] * args.jobs,
                [grounding] * args.jobs,
            )
        )
    wall = time.perf_counter() - started
    outcomes: dict[str, list[PairOutcome]] = {}
    seconds: dict[str, float] = {}
    for found, spent in parts:
        for name, rows in found.items():
            outcomes.setdefault(name, []).extend(rows)
        for name, value in spent.items():
            seconds[name] = seconds.get(name, 0.0) + value
    results = {
        name: Localisation(sorted(rows, key=lambda o: o.id)) for name, rows in outcomes.items()
    }
    kinds: dict[str, int] = {}
    for row in next(iter(outcomes.values())):
        kinds[row.kind] = kinds.get(row.kind, 0) + 1
    print(
        f"planted-edit set: seed {args.seed}, {args.pairs} pairs of {args.size}x{args.size} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}), "
        f"{next(iter(results.values())).requested_edits} requested edits; "
        f"{wall:.0f} s wall with {args.jobs} job(s), drawing "
        f"{1000 * seconds['(drawing)'] / args.pairs:.0f} ms/pair"
    )
    print(_table(results, seconds, args.pairs))
    if args.json:
        figures = {
            "seed": args.seed,
            "pairs": args.pairs,
            "size": args.size,
            "kinds": kinds,
            "tools": {
                name: {**loc.summary(), "by_kind": loc.edits_found_by_kind()}
                for name, loc in results.items()
            },
        }
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
