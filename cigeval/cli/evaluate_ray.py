"""``cigeval evaluate --engine ray``: the same run, with the samples judged on a Ray cluster.

The driver (this process) reads the samples file, skips what ``--out`` already holds, sends
the rest to the worker actors and writes each record as it comes back, with the usual
writer and summary: a crash keeps every record written, and a rerun resumes.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from cigeval.cli._common import UsageError, run_preflight
from cigeval.cli.evaluate import _open_writer, _pending, end_of_run, previous_errors
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.engines.settings import EngineConfig
from cigeval.errors import CigevalError
from cigeval.sample import iter_samples_file

if TYPE_CHECKING:
    from cigeval.engines.ray_engine import WorkerSpec


class _Terminated(Exception):
    """SIGTERM arrived while records were coming back."""


def run_on_ray(
    args: argparse.Namespace,
    config: EvalConfig,
    run_config: RunConfig,
    ensemble: EnsembleConfig,
    engine: EngineConfig,
) -> int:
    """Judge the pending samples of ``args.samples`` on Ray and append their records."""
    from cigeval.engines.ray_engine import ray_session, worker_spec
    from cigeval.results import RunSummary, load_price_table

    try:
        prices = load_price_table(args.price_table) if args.price_table else None
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    with contextlib.ExitStack() as stack:
        try:
            ray = stack.enter_context(ray_session(engine.ray_address))
            _quiet_ray_data(ray)
            spec = worker_spec(
                list(args.model),
                engine,
                config=config,
                run_config=run_config,
                ensemble=ensemble,
                base_url=args.base_url,
            )
        except CigevalError as exc:
            raise UsageError(str(exc)) from None
        if run_config.preflight:
            from cigeval.engines.ray_engine import preflight_on_ray

            run_preflight(
                lambda: preflight_on_ray(spec, engine), args.quiet, label="preflight on Ray"
            )
        return _write_records(args, ray, spec, engine, RunSummary(prices=prices))


def _write_records(
    args: argparse.Namespace, ray: Any, spec: WorkerSpec, engine: EngineConfig, summary: Any
) -> int:
    """Send the pending samples to the workers; write each record as it comes back."""
    from tqdm import tqdm

    from cigeval.engines._rows import decode_record, encode_line
    from cigeval.engines.ray_engine import judge_dataset
    from cigeval.score import Score

    writer = _open_writer(args)
    stopped_by: list[str] = []
    started = time.perf_counter()
    counts = {"skipped": 0, "duplicates": 0}
    with writer:
        summary.previous_errors = previous_errors(writer)
        pending = _pending(iter_samples_file(args.samples), writer.finished, args.limit, counts)
        rows = [encode_line(x, refresh=x.sample_id in writer.retrying) for x in pending]
        progress = tqdm(total=len(rows), disable=args.quiet, unit="sample", file=sys.stderr)
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
        try:
            if rows:
                # one block per sample: each goes to whichever worker is free
                samples = ray.data.from_items(rows, override_num_blocks=len(rows))
                for row in judge_dataset(samples, spec, engine).iter_rows():
                    score = Score.from_record(decode_record(row))
                    writer.write(score)
                    summary.add(score)
                    progress.update(1)
                    progress.set_postfix(errors=summary.statuses["error"], refresh=False)
        except KeyboardInterrupt:
            stopped_by.append("SIGINT")
        except _Terminated:
            stopped_by.append("SIGTERM")
        finally:
            signal.signal(signal.SIGTERM, previous)
            progress.close()
        summary.skipped = counts["skipped"]
    return end_of_run(summary, time.perf_counter() - started, counts, stopped_by)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def _quiet_ray_data(ray: Any) -> None:
    """No Ray Data progress bars or start-of-execution lines: the run has its own."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
