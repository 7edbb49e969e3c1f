"""The ``cigeval probe`` command: check that a judge looks at the images, and watch for drift."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from cigeval.cli._common import (
    EXIT_OK,
    EXIT_SAMPLE_ERRORS,
    EXIT_USAGE,
    UsageError,
    make_evaluator,
    run_preflight,
)
from cigeval.cli._flags import add_config_flags, build_config, judge_configs
from cigeval.cli._track import add_track_flags, log_probe, trackers_from_args
from cigeval.cli.evaluate import default_image_dir
from cigeval.config import RUN_FILE_FIELDS, EnsembleConfig, EvalConfig, RunConfig
from cigeval.errors import CigevalError
from cigeval.terminal import safe_text


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def configure_probe_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``probe``."""
    from cigeval.probes import ProbeConfig, kind_names, probe_tasks

    p.description = (
        "Draw a probe set of synthetic images with known content for every task, "
        "judge it like `evaluate` does, and report per task and probe kind whether the scores "
        "moved the right way (docs/probes.md). Writes the report to --out, the probe images "
        "to OUT.probe-set/ and the full records to OUT.records.jsonl. With --compare OLD.json "
        "the run asks every sample afresh (no cache) and adds what changed since OLD; "
        "--compare OLD.json NEW.json compares two stored reports without running anything. "
        "Exit status: 0 done, 1 pass rate below --min-pass-rate, every probe in error, or "
        "drift with --fail-on-drift; 2 usage error."
    )
    p.add_argument(
        "--model",
        action="append",
        help="judge model: openai:<name>[@URL], anthropic:, gemini:, azure:, litellm: (each "
        "also with @URL; docs/judges.md), hf:<name or path>; repeat for an ensemble",
    )
    p.add_argument("--base-url", help="OpenAI-compatible server URL (else $OPENAI_BASE_URL)")
    p.add_argument(
        "--out", type=Path, help="probe report (JSON); with two --compare reports, the drift (JSON)"
    )
    p.add_argument(
        "--tasks",
        type=_names,
        metavar="NAMES",
        help=f"comma-separated tasks to probe (default: all of {', '.join(probe_tasks())})",
    )
    p.add_argument(
        "--kinds",
        type=_names,
        metavar="NAMES",
        help=f"comma-separated probe kinds (default: all of {', '.join(kind_names())})",
    )
    p.add_argument(
        "--min-pass-rate",
        type=float,
        metavar="X",
        help="exit with status 1 when the pass rate is below X (0-1), for CI gates",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        metavar="REPORT",
        help="OLD.json: run, then report what changed since OLD; OLD.json NEW.json: compare "
        "two stored reports only",
    )
    p.add_argument(
        "--fail-on-drift",
        action="store_true",
        help="with --compare: exit with status 1 when a probe changed status or a score of an "
        "identical probe moved by more than the hold tolerance",
    )
    p.add_argument(
        "--probe-dir",
        type=Path,
        metavar="DIR",
        help="folder for the probe set's images and samples.jsonl (default: OUT.probe-set)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_track_flags(p)
    add_config_flags(p.add_argument_group("probe thresholds (0-1 score scale)"), ProbeConfig)
    add_config_flags(p.add_argument_group("judging"), EvalConfig)
    add_config_flags(p.add_argument_group("ensembles"), EnsembleConfig)
    add_config_flags(p.add_argument_group("running"), RunConfig, skip=RUN_FILE_FIELDS)


def _load(path: Path) -> Any:
    from cigeval.probes import load_report

    try:
        return load_report(path)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None


def _compare_only(args: argparse.Namespace) -> int:
    """``--compare OLD NEW``: the drift between two stored reports."""
    from cigeval.probes import compare_reports, render_drift

    if args.model:
        raise UsageError("--compare OLD NEW compares two stored reports; leave out --model")
    if args.track:
        raise UsageError("--track logs a probe run; --compare OLD NEW runs nothing to log")
    old, new = (_load(path) for path in args.compare)
    drift = compare_reports(old, new)
    print(safe_text(render_drift(drift), lines=True))
    if args.out is not None:
        args.out.write_text(drift.model_dump_json(indent=2) + "\n", encoding="utf-8")
        print(f"wrote the drift between the two reports to {args.out}", file=sys.stderr)
    return EXIT_SAMPLE_ERRORS if args.fail_on_drift and drift.changed else EXIT_OK


def run_probe(args: argparse.Namespace) -> int:
    """The ``probe`` command."""
    from cigeval.probes import ProbeConfig

    compare = args.compare or []
    if len(compare) > 2:
        raise UsageError("--compare takes one stored report (OLD) or two (OLD NEW)")
    if args.fail_on_drift and not compare:
        raise UsageError("--fail-on-drift needs --compare OLD.json")
    if args.min_pass_rate is not None and not 0 <= args.min_pass_rate <= 1:
        raise UsageError(f"--min-pass-rate must be between 0 and 1, got {args.min_pass_rate}")
    if len(compare) == 2:
        return _compare_only(args)
    if not args.model:
        raise UsageError("--model is required (or --compare OLD.json NEW.json)")
    if args.out is None:
        raise UsageError("--out is required: where to write the probe report")
    old = _load(compare[0]) if compare else None
    settings = build_config(args, ProbeConfig)
    trackers = trackers_from_args(args)
    report, answers, written = _run(args, settings, bypass_cache=old is not None)
    drift = None
    if old is not None:
        from cigeval.probes import compare_reports

        drift = compare_reports(old, report)
        report.drift = drift.model_dump(mode="json")
    try:
        report.save(args.out)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {args.out}: {exc}") from None
    log_probe(trackers, report, args.out)
    return _finish(args, report, drift, answers, written)


def _run(args: argparse.Namespace, settings: Any, bypass_cache: bool) -> tuple[Any, Any, int]:
    """Build the probe set, judge it, write the records; the report, a tally of what the
    judge answered in the samples that failed, and the records written."""
    from tqdm import tqdm

    from cigeval.probes import build_probe_set, run_probe_set
    from cigeval.probes.answers import JudgeAnswers
    from cigeval.results import ResultsWriter
    from cigeval.runs.progress import counting_calls

    config, run_config, ensemble = judge_configs(args, image_dir=default_image_dir(args.out))
    folder = args.probe_dir or args.out.with_name(args.out.stem + ".probe-set")
    records = args.out.with_name(args.out.stem + ".records.jsonl")
    try:
        probe_set = build_probe_set(folder, args.tasks, args.kinds)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the probe set to {folder}: {exc}") from None
    evaluator = make_evaluator(args, config, run_config, ensemble)
    if run_config.preflight:
        run_preflight(evaluator.preflight, args.quiet)
    if bypass_cache:
        print("--compare: every probe sample is asked afresh (no response cache)", file=sys.stderr)
    progress = tqdm(disable=args.quiet, unit="sample", file=sys.stderr)
    try:
        writer = ResultsWriter(records, resume=False)
    except OSError as exc:
        raise UsageError(f"cannot write records to {records}: {exc}") from None

    answers = JudgeAnswers()
    written = 0

    def on_score(_: Any, score: Any) -> None:
        nonlocal written
        writer.write(score)
        answers.add(score)
        written += 1
        progress.update(1)

    async def run() -> Any:
        try:
            return await run_probe_set(
                evaluator, probe_set, settings, bypass_cache=bypass_cache, on_score=on_score
            )
        finally:
            await evaluator.aclose()

    with writer:
        try:
            with counting_calls(progress):  # model calls and tokens as they happen
                report = asyncio.run(run())
        finally:
            progress.close()
    report.records = str(records)
    return report, answers, written


def _finish(args: argparse.Namespace, report: Any, drift: Any, answers: Any, written: int) -> int:
    """Print the table (and the drift) on stdout, what was written on stderr; the exit
    status."""
    from cigeval.probes import render_drift, render_table

    print(safe_text(render_table(report), lines=True))
    if drift is not None:
        print()
        print(safe_text(render_drift(drift), lines=True))
    print(
        f"wrote the probe report ({report.total} probes) to {args.out}, {written} record(s) "
        f"to {report.records}; the probe set is in {report.probe_set}",
        file=sys.stderr,
    )
    if report.total == 0:
        reasons = "; ".join(f"{s.id}: {s.reason}" for s in report.skipped[:3])
        print(
            f"cigeval: error: no probe applies to this judge ({safe_text(reasons)})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    status = EXIT_OK
    if report.errors == report.total:
        print(safe_text(answers.describe(), lines=True), file=sys.stderr)
        status = EXIT_SAMPLE_ERRORS
    if args.min_pass_rate is not None and (report.pass_rate or 0.0) < args.min_pass_rate:
        print(
            f"pass rate {report.pass_rate:.3f} is below --min-pass-rate {args.min_pass_rate}",
            file=sys.stderr,
        )
        status = EXIT_SAMPLE_ERRORS
    if args.fail_on_drift and drift is not None and drift.changed:
        status = EXIT_SAMPLE_ERRORS
    return status
