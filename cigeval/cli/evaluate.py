"""The ``cigeval evaluate`` command: arguments, settings, and the resumable run."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cigeval.cli._common import EXIT_OK, EXIT_SAMPLE_ERRORS, UsageError
from cigeval.cli._flags import add_config_flags, add_tasks_file_flag, build_config, load_tasks_files
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.errors import CigevalError
from cigeval.sample import SampleLine, iter_samples_file


def add_evaluate_subparser(subparsers: Any) -> None:
    """Register ``evaluate`` and its options on the ``cigeval`` parser."""
    p = subparsers.add_parser(
        "evaluate",
        help="judge every sample of a JSONL file",
        description="Judge every sample of SAMPLES.jsonl and append one record per sample to "
        "--out. Rerunning with the same --out resumes: finished ids are skipped. Exit status: "
        "0 all ok, 1 some samples ended in error (their records are written), 2 usage error.",
    )
    p.add_argument("samples", type=Path, help="samples JSONL (image paths relative to it)")
    p.add_argument(
        "--model",
        action="append",
        required=True,
        help="judge model: openai:<name>[@URL], hf:<name or path>; repeat for an ensemble",
    )
    p.add_argument("--base-url", help="OpenAI-compatible server URL (else $OPENAI_BASE_URL)")
    p.add_argument("--out", type=Path, required=True, help="results JSONL (appended, resumable)")
    add_tasks_file_flag(p)
    add_config_flags(p.add_argument_group("judging"), EvalConfig)
    add_config_flags(p.add_argument_group("ensembles"), EnsembleConfig)
    r = p.add_argument_group("running")
    add_config_flags(r, RunConfig)
    r.add_argument(
        "--retry-errors",
        action="store_true",
        help="rerun samples recorded as error (their old records are dropped)",
    )
    r.add_argument(
        "--overwrite", action="store_true", help="start --out afresh instead of resuming"
    )
    r.add_argument("--no-trace", action="store_true", help="leave the trace out of the records")
    r.add_argument("--limit", type=int, help="evaluate at most N samples")
    r.add_argument("--price-table", type=Path, help="JSON: model -> USD per 1M prompt/completion")
    r.add_argument("--quiet", action="store_true", help="no progress bar")


def build_configs(args: argparse.Namespace) -> tuple[EvalConfig, RunConfig, EnsembleConfig]:
    """The three configs from the parsed ``evaluate`` arguments (UsageError when invalid)."""
    return (
        build_config(args, EvalConfig),
        build_config(args, RunConfig, base={"image_dir": default_image_dir(args.out)}),
        build_config(args, EnsembleConfig),
    )


def default_image_dir(out: Path) -> Path:
    """Where a run keeps the images it showed the judge: ``results.jsonl`` -> ``results.images``."""
    return out.with_name(out.stem + ".images")


def _pending(
    lines: Iterator[SampleLine], finished: set[str], limit: int | None, counts: dict[str, int]
) -> Iterator[SampleLine]:
    """Samples still to do: skips finished ids and repeated ids (reported, never silent)."""
    seen: set[str] = set()
    emitted = 0
    for line in lines:
        sample_id = line.sample_id
        if sample_id in finished:
            counts["skipped"] += 1
            continue
        if sample_id in seen:
            counts["duplicates"] += 1
            print(
                f"warning: sample id {sample_id!r} repeated on line {line.line_number}; "
                "only its first occurrence is evaluated",
                file=sys.stderr,
            )
            continue
        if limit is not None and emitted >= limit:
            return
        seen.add(sample_id)
        emitted += 1
        yield line


def run_evaluate(args: argparse.Namespace) -> int:
    """The ``evaluate`` command."""
    from tqdm import tqdm

    from cigeval.evaluation import Evaluator
    from cigeval.results import ResultsWriter, RunSummary, load_price_table

    if not args.samples.is_file():
        raise UsageError(f"samples file not found: {args.samples}")
    load_tasks_files(args)
    config, run_config, ensemble = build_configs(args)
    try:
        prices = load_price_table(args.price_table) if args.price_table else None
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    try:
        evaluator = Evaluator(
            args.model,
            config=config,
            run_config=run_config,
            base_url=args.base_url,
            ensemble=ensemble,
        )
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    summary = RunSummary(prices=prices)
    try:
        writer = ResultsWriter(
            args.out,
            resume=not args.overwrite,
            retry_errors=args.retry_errors,
            include_trace=not args.no_trace,
        )
    except OSError as exc:
        raise UsageError(f"cannot write results to {args.out}: {exc}") from None
    with writer:
        summary.previous_errors = sum(
            1 for status in writer.previous_statuses.values() if status == "error"
        )
        counts = {"skipped": 0, "duplicates": 0}
        with args.samples.open(encoding="utf-8") as handle:
            total = sum(1 for line in handle if line.strip())
        todo = max(0, total - len(writer.finished))
        if args.limit is not None:
            todo = min(todo, args.limit)
        pending = _pending(iter_samples_file(args.samples), writer.finished, args.limit, counts)
        started = time.perf_counter()
        progress = tqdm(total=todo, disable=args.quiet, unit="sample", file=sys.stderr)

        async def consume() -> None:
            try:
                async for score in evaluator.stream(pending, run_config.concurrency):
                    writer.write(score)
                    summary.add(score)
                    progress.update(1)
                    progress.set_postfix(errors=summary.statuses["error"], refresh=False)
            finally:
                await evaluator.aclose()

        try:
            asyncio.run(consume())
        finally:
            progress.close()
        summary.skipped = counts["skipped"]
    wall = time.perf_counter() - started
    print(summary.render(wall), file=sys.stderr)
    if counts["duplicates"]:
        print(f"{counts['duplicates']} repeated sample id(s) were not evaluated", file=sys.stderr)
    return EXIT_OK if summary.all_ok else EXIT_SAMPLE_ERRORS
