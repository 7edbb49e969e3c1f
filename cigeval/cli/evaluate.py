"""The ``cigeval evaluate`` command: arguments, settings, and the resumable run."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SAMPLE_ERRORS,
    EXIT_TERMINATED,
    UsageError,
    make_evaluator,
    run_preflight,
)
from cigeval.cli._flags import add_config_flags, add_tasks_file_flag, build_config, load_tasks_files
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.engines.settings import EngineConfig
from cigeval.errors import CigevalError
from cigeval.results.lock import ResultsLock, ResultsLocked
from cigeval.sample import SampleLine, iter_samples_file

if TYPE_CHECKING:
    from cigeval.evaluation import Evaluator
    from cigeval.results import ResultsWriter, RunSummary


def add_evaluate_subparser(subparsers: Any) -> None:
    """Register ``evaluate`` and its options on the ``cigeval`` parser."""
    p = subparsers.add_parser(
        "evaluate",
        help="judge every sample of a JSONL file",
        description="Judge every sample of SAMPLES.jsonl and append one record per sample to "
        "--out. Rerunning with the same --out resumes: finished ids are skipped. One run at a "
        "time per --out (a second one exits with status 2). Before the first sample, the "
        "judge and the offered tools are checked (--no-preflight skips this). Exit status: "
        "0 all ok, 1 some samples ended in error (their records are written), 2 usage error, "
        "failed preflight or --out in use, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); "
        "after 130 or 143, rerun the same command to finish.",
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
    add_config_flags(p.add_argument_group("engine (docs/ray.md)"), EngineConfig)
    r = p.add_argument_group("running")
    add_config_flags(r, RunConfig)
    r.add_argument(
        "--retry-errors",
        action="store_true",
        help="rerun samples recorded as error, asking the judge again rather than reading "
        "cached answers (their old records are dropped)",
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
        build_config(
            args,
            RunConfig,
            base={
                "image_dir": default_image_dir(args.out),
                "batch_state": default_batch_state(args.out),
            },
        ),
        build_config(args, EnsembleConfig),
    )


def default_image_dir(out: Path) -> Path:
    """Where a run keeps the images it showed the judge: ``results.jsonl`` -> ``results.images``."""
    return out.with_name(out.stem + ".images")


def default_batch_state(out: Path) -> Path:
    """Where ``--batch`` records its batches: ``results.jsonl`` -> ``results.batches.json``."""
    return out.with_name(out.stem + ".batches.json")


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

    if not args.samples.is_file():
        raise UsageError(f"samples file not found: {args.samples}")
    load_tasks_files(args)
    config, run_config, ensemble = build_configs(args)
    engine = build_config(args, EngineConfig)
    if engine.engine == "ray" and run_config.batch:
        raise UsageError(
            "--batch and --engine ray cannot be combined: a provider batch gathers the calls "
            "of one process; use --batch on one machine, or --engine ray with direct calls"
        )
    evaluator = make_evaluator(args, config, run_config, ensemble)
    lock = ResultsLock(args.out)
    try:
        lock.acquire()
    except ResultsLocked as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write results to {args.out}: {exc}") from None
    with lock:
        if engine.engine == "ray":
            from cigeval.cli.evaluate_ray import run_on_ray

            return run_on_ray(args, config, run_config, ensemble, engine)
        if run_config.preflight:
            run_preflight(evaluator.preflight, args.quiet)
        return _run(args, evaluator, run_config)


def _count_lines(path: Path) -> int:
    """Non-blank lines of a file, read as bytes (a bad byte must not stop the count)."""
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def _open_writer(args: argparse.Namespace) -> ResultsWriter:
    from cigeval.results import ResultsWriter

    try:
        writer = ResultsWriter(
            args.out,
            resume=not args.overwrite,
            retry_errors=args.retry_errors,
            include_trace=not args.no_trace,
            lock=False,  # run_evaluate holds the lock already
        )
    except OSError as exc:
        raise UsageError(f"cannot write results to {args.out}: {exc}") from None
    if writer.skipped:
        listed = "; ".join(str(line) for line in writer.skipped[:5])
        more = f"; and {len(writer.skipped) - 5} more" if len(writer.skipped) > 5 else ""
        print(
            f"warning: {len(writer.skipped)} unreadable line(s) of {args.out} moved to "
            f"{writer.rejected_path} ({listed}{more}); their samples run again",
            file=sys.stderr,
        )
    return writer


def _run(args: argparse.Namespace, evaluator: Evaluator, run_config: RunConfig) -> int:
    """Evaluate what is still to do, append the records, print the summary."""
    from tqdm import tqdm

    from cigeval.results import RunSummary, load_price_table

    try:
        prices = load_price_table(args.price_table) if args.price_table else None
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    summary = RunSummary(prices=prices)
    writer = _open_writer(args)
    stopped_by: list[str] = []
    started = time.perf_counter()
    with writer:
        summary.previous_errors = previous_errors(writer)
        counts = {"skipped": 0, "duplicates": 0}
        todo = max(0, _count_lines(args.samples) - len(writer.finished))
        if args.limit is not None:
            todo = min(todo, args.limit)
        pending = _pending(iter_samples_file(args.samples), writer.finished, args.limit, counts)
        progress = tqdm(total=todo, disable=args.quiet, unit="sample", file=sys.stderr)

        async def consume() -> None:
            loop = asyncio.get_running_loop()
            main = asyncio.current_task()
            handled = _on_sigterm(loop, main, stopped_by)
            try:
                stream = evaluator.stream(
                    pending, run_config.concurrency, refresh_ids=writer.retrying
                )
                async for score in stream:
                    writer.write(score)
                    summary.add(score)
                    progress.update(1)
                    progress.set_postfix(errors=summary.statuses["error"], refresh=False)
            finally:
                if handled:
                    loop.remove_signal_handler(signal.SIGTERM)
                await evaluator.aclose()

        try:
            asyncio.run(consume())
        except asyncio.CancelledError:
            if not stopped_by:
                raise
        except KeyboardInterrupt:
            stopped_by.append("SIGINT")
        finally:
            progress.close()
        summary.skipped = counts["skipped"]
    if evaluator.batch is not None:
        summary.batch = evaluator.batch.stats
    return end_of_run(summary, time.perf_counter() - started, counts, stopped_by)


def previous_errors(writer: ResultsWriter) -> int:
    """How many records already in ``--out`` ended in error (the summary reports them)."""
    return sum(1 for status in writer.previous_statuses.values() if status == "error")


def end_of_run(
    summary: RunSummary, wall_s: float, counts: dict[str, int], stopped_by: list[str]
) -> int:
    """Print the summary, repeated ids and how the run stopped; the exit status."""
    print(summary.render(wall_s), file=sys.stderr)
    if counts["duplicates"]:
        print(f"{counts['duplicates']} repeated sample id(s) were not evaluated", file=sys.stderr)
    if stopped_by:
        how = "terminated (SIGTERM)" if stopped_by[0] == "SIGTERM" else "interrupted"
        print(
            f"cigeval: {how}; the records above are kept and the samples in flight were left "
            "for the next run: rerun the same command to resume",
            file=sys.stderr,
        )
        return EXIT_TERMINATED if stopped_by[0] == "SIGTERM" else EXIT_INTERRUPTED
    return EXIT_OK if summary.all_ok else EXIT_SAMPLE_ERRORS


def _on_sigterm(
    loop: asyncio.AbstractEventLoop, main: asyncio.Task[Any] | None, stopped_by: list[str]
) -> bool:
    """Make SIGTERM stop the run as Ctrl-C does (cancel the main task); False where the
    platform cannot (Windows, or not the main thread)."""
    if main is None:
        return False

    def stop() -> None:
        if not stopped_by:
            stopped_by.append("SIGTERM")
            main.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, stop)
    except (NotImplementedError, RuntimeError, ValueError):
        return False
    return True
