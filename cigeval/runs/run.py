"""One run over a results file: what ``cigeval evaluate`` and ``Evaluator.run`` both do.

A run takes the lock on the results file, prepares its engine (the preflight), resumes
(skipping the ids already recorded), judges the pending samples, appends each record as its
sample finishes, counts it in the summary, stops cleanly on Ctrl-C or SIGTERM, and ends by
handing the :class:`RunResult` to each end-of-run callback.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.backends.observers import observing
from cigeval.backends.reachability import ServerWatch
from cigeval.config import RUN_FILE_FIELDS, RunConfig
from cigeval.engines.base import Engine, engine_for
from cigeval.engines.settings import EngineConfig
from cigeval.errors import ResultsWriteError
from cigeval.evaluation import Evaluator, SampleInput
from cigeval.results.jsonl import ResultsWriter
from cigeval.results.lock import ResultsLock
from cigeval.results.summary import RunSummary
from cigeval.runs.breaker import ServerWatching
from cigeval.runs.guards import (
    check_samples_file,
    refuse_overwriting_non_results,
    refuse_planted_links,
    refuse_results_over_inputs,
    results_paths,
)
from cigeval.runs.pending import PendingCounts, PendingRules, expected_total, pending_samples
from cigeval.runs.preflight import preflight_step
from cigeval.runs.progress import counting_calls
from cigeval.runs.recorder import Recorder
from cigeval.runs.result import RunCallback, RunResult
from cigeval.runs.snapshot import SamplesSnapshot
from cigeval.sample_files import recording_failed_inputs
from cigeval.signals import Stop, raise_on_sigterm
from cigeval.terminal import echo, safe_text

#: What a run reads samples from: a samples JSONL file, or any iterable of samples.
Samples = str | os.PathLike[str] | Iterable[SampleInput]


def run_samples(
    evaluator: Evaluator,
    samples: Samples,
    out: str | os.PathLike[str],
    *,
    options: RunConfig | None = None,
    engine: EngineConfig | None = None,
    prices: dict[str, dict[str, float]] | None = None,
    callbacks: Sequence[RunCallback] = (),
    quiet: bool = False,
) -> RunResult:
    """Judge ``samples`` with ``evaluator`` and append one record per sample to ``out``.

    ``samples`` is the path of a samples JSONL file (image paths relative to it) or any
    iterable of :class:`~cigeval.Sample`, :class:`~cigeval.sample.SampleLine` or dicts,
    consumed lazily. Rerunning with the same ``out`` resumes: ids already recorded are
    skipped (the run-file fields of ``options``, else of the evaluator's ``run_config``, say
    otherwise: overwrite, retry errors, limit). ``engine`` picks
    where samples are judged (this process, or Ray); ``prices`` is a price table
    (:func:`cigeval.results.load_price_table`) for the cost in the summary; ``quiet`` hides
    the progress bar and the preflight line (warnings still go to stderr).

    Raises before any sample is judged: :class:`~cigeval.results.ResultsLocked` when another
    run holds ``out`` (under any name), :class:`~cigeval.results.fingerprint.MixedSettings`
    when ``out`` holds records made with other settings (unless
    ``options.allow_mixed_settings``), :class:`~cigeval.errors.ResultsWriteError` when
    ``out`` cannot be written, :class:`~cigeval.errors.PreflightError` when a judge or tool
    is not usable, :class:`~cigeval.errors.CigevalError` for a bad engine setup. A write
    that fails later raises ResultsWriteError too (``out`` ends with its last complete
    record). Otherwise it returns the :class:`RunResult`, also when Ctrl-C, SIGTERM or the
    circuit breaker stopped the run (``stopped_by`` says which; the samples not judged are
    left for the next run). Each of ``callbacks`` then gets the result; one that raises is
    reported in ``result.notes``.
    """
    options = run_file_settings(evaluator.run_config, options)
    engine = engine or EngineConfig()
    out = Path(out)
    source: Path | Iterable[SampleInput]
    snapshot: SamplesSnapshot | None = None
    if isinstance(samples, str | os.PathLike):
        source = Path(samples)
        check_samples_file(source)
        refuse_results_over_inputs(written_paths(evaluator, out), [("samples file", source)])
    else:
        source = samples
    refuse_planted_links(written_paths(evaluator, out))
    if options.overwrite:
        refuse_overwriting_non_results(out)
    if isinstance(source, Path):
        snapshot = SamplesSnapshot(source)
    lock = ResultsLock(out)
    try:
        lock.acquire()
    except OSError as exc:
        raise ResultsWriteError(f"cannot write results to {out}: {exc}") from None
    # SIGTERM outside the judging (which handles it itself) still releases the lock
    with raise_on_sigterm(), lock:
        runner = engine_for(engine, evaluator, ray_log_file(out))
        try:
            runner.prepare(quiet)
            if evaluator.run_config.preflight:
                preflight_step(runner.preflight, quiet, label=runner.preflight_label)
            result = _judge(
                runner, evaluator, source, out, lock, options, engine, prices, quiet, snapshot
            )
        finally:
            runner.close()
    for callback in callbacks:
        try:
            callback(result)
        except Exception as exc:  # a tracker's failure must not hide the run's outcome
            name = getattr(callback, "__name__", type(callback).__name__)
            result.notes.append(
                f"cigeval: the end-of-run callback {name} failed: {type(exc).__name__}: {exc}"
            )
    return result


def _judge(
    runner: Engine,
    evaluator: Evaluator,
    source: Path | Iterable[SampleInput],
    out: Path,
    lock: ResultsLock,
    options: RunConfig,
    engine: EngineConfig,
    prices: dict[str, dict[str, float]] | None,
    quiet: bool,
    snapshot: SamplesSnapshot | None = None,
) -> RunResult:
    """Open the results file, judge what is pending, and count what was written; a samples
    file that changed meanwhile (``snapshot``) raises SamplesChanged once the samples in
    flight are written."""
    from tqdm import tqdm

    summary = RunSummary(prices=prices, group_by=options.group_by)
    writer = open_writer(out, options, evaluator.fingerprint_settings())
    try:
        lock.hold_file()  # the file may be new, or replaced by the resume's repair
    except BaseException:
        writer.close()
        raise
    stop = Stop()
    counts = PendingCounts()
    started = time.perf_counter()
    with writer:
        summary.previous_errors = previous_errors(writer)
        items: Iterable[Any]
        if isinstance(source, Path):
            assert snapshot is not None, "a samples file is read through its snapshot"
            items = snapshot.lines()
        else:
            items = source
        rules = PendingRules(
            writer.previous_images,
            options.recheck_images,
            options.max_text_chars,
            options.max_image_bytes,
        )
        pending = pending_samples(items, writer.finished, options.limit, counts, rules)
        total = expected_total(source, writer.finished, options.limit)
        progress = tqdm(total=total, disable=quiet, unit="sample", file=sys.stderr)
        recorder = Recorder(writer, summary, options, stop, progress)
        recorder.items = counts.items
        if evaluator.calibration is not None:
            recorder.calibrate = evaluator.calibrate_score
        recorder.positions = counts.positions
        if snapshot is not None:
            recorder.provenance["samples_file"] = snapshot.provenance()
        servers = None
        if options.circuit_breaker > 0:
            watch = ServerWatch(options.circuit_breaker_s, options.circuit_breaker)
            servers = ServerWatching(watch, recorder.servers_down)
        try:
            # model calls and tokens on the bar as they happen; every request's outcome
            # for the circuit breaker; the files of a sample that failed to load hashed off
            # the event loop for its record
            with (
                counting_calls(progress),
                observing(servers.watch if servers else None),
                recording_failed_inputs(),
            ):
                runner.judge(pending, writer.retrying, recorder.accept, stop, _down(servers))
            recorder.finish()
        finally:
            progress.close()
        summary.skipped = counts.skipped
        # a recorded error judged again (its image changed) is this run's outcome now
        summary.previous_errors = previous_errors(writer, set(counts.rechecked))
        if counts.unchecked:
            unchecked = in_callers_words("--no-recheck-images", "recheck_images=False")
            echo(
                f"{unchecked}: {counts.unchecked} sample(s) kept from {safe_text(out)} "
                "without checking whether their images changed since they were judged"
            )
    if snapshot is not None and snapshot.changed is not None:
        raise snapshot.error()
    summary.batch = runner.batch_stats()
    return RunResult(
        out=out,
        summary=summary,
        wall_s=time.perf_counter() - started,
        config=evaluator.config,
        run_config=options,
        ensemble=evaluator.ensemble,
        engine=engine,
        duplicates=counts.duplicates,
        stopped_by=stop.reason,
        breaker=recorder.breaker if recorder.breaker.tripped else None,
    )


def run_file_settings(base: RunConfig, options: RunConfig | None) -> RunConfig:
    """``base`` (the evaluator's run config) with the run-file fields
    (:data:`~cigeval.config.RUN_FILE_FIELDS`) of ``options`` when given."""
    if options is None:
        return base
    return base.model_copy(update={name: getattr(options, name) for name in RUN_FILE_FIELDS})


def _down(servers: ServerWatching | None) -> Callable[[], bool] | None:
    """Whether the run stops now because its watch says the judge's servers are down."""
    if servers is None:
        return None

    def down() -> bool:
        seen = servers.watch.down()
        return seen is not None and servers.on_down(seen)

    return down


def open_writer(out: Path, options: RunConfig, settings: dict[str, Any]) -> ResultsWriter:
    """The writer of a run that holds the lock on ``out`` already: resumed (and repaired)
    unless ``options.overwrite``; unreadable lines moved aside are reported on stderr.

    Records of ``out`` made with other ``settings`` (fingerprint settings) raise
    :class:`~cigeval.results.fingerprint.MixedSettings` unless
    ``options.allow_mixed_settings``."""
    try:
        writer = ResultsWriter(
            out,
            resume=not options.overwrite,
            retry_errors=options.retry_errors,
            include_trace=options.include_trace,
            lock=False,
            settings=settings,
            allow_mixed_settings=options.allow_mixed_settings,
        )
    except OSError as exc:
        raise ResultsWriteError(f"cannot write results to {out}: {exc}") from None
    if writer.skipped:
        listed = "; ".join(str(line) for line in writer.skipped[:5])
        more = f"; and {len(writer.skipped) - 5} more" if len(writer.skipped) > 5 else ""
        echo(
            f"warning: {len(writer.skipped)} unreadable line(s) of {safe_text(out)} moved to "
            f"{safe_text(writer.rejected_path)} ({safe_text(listed)}{more}); their samples "
            "run again"
        )
    return writer


def written_paths(evaluator: Evaluator, out: Path) -> dict[str, Path]:
    """Every file or folder a run of ``evaluator`` on ``out`` writes (:func:`results_paths`)."""
    run_config = evaluator.run_config
    others = {"its batch state": run_config.batch_state, "its Ray log": ray_log_file(out)}
    return results_paths(out, run_config.image_dir, others)


def ray_log_file(out: Path) -> Path:
    """Where a Ray run writes Ray's own log lines: ``results.jsonl`` -> ``results.ray.log``."""
    return out.with_name(out.stem + ".ray.log")


def previous_errors(writer: ResultsWriter, judged_again: set[str] | None = None) -> int:
    """How many records already in the results file ended in error (the summary says so),
    leaving out the samples ``judged_again`` by this run."""
    again = judged_again or set()
    return sum(
        1
        for sample_id, status in writer.previous_statuses.items()
        if status == "error" and sample_id not in again
    )
