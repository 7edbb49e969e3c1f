"""The ``cigeval evaluate`` command: arguments and settings; the run itself is
:func:`cigeval.runs.run_samples`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cigeval.cli._common import UsageError, make_evaluator
from cigeval.cli._flags import add_config_flags, add_tasks_file_flag, build_config, load_tasks_files
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.engines.settings import EngineConfig
from cigeval.errors import CigevalError, PreflightError
from cigeval.runs import RunOptions, run_samples


def add_evaluate_subparser(subparsers: Any) -> None:
    """Register ``evaluate`` and its options on the ``cigeval`` parser."""
    p = subparsers.add_parser(
        "evaluate",
        help="judge every sample of a JSONL file",
        description="Judge every sample of SAMPLES.jsonl and append one record per sample to "
        "--out. Rerunning with the same --out resumes: finished ids are skipped. One run at a "
        "time per --out (a second one exits with status 2), with one set of settings (a "
        "resume with other settings exits with status 2 naming them). Before the first "
        "sample, the judge and the offered tools are checked (--no-preflight skips this).",
        epilog="exit status: 0 all ok; 1 some samples ended in error (their records are "
        "written); 2 nothing judged (usage error, failed preflight, --out in use, with other "
        "settings or not writable); 3 stopped by the circuit breaker (the judge server is "
        "down); 130 interrupted (Ctrl-C); 143 terminated (SIGTERM). After 3, 130 or 143, "
        "rerun the same command to finish. The table: docs/exit-statuses.md",
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
    add_config_flags(r, RunOptions)
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


def run_evaluate(args: argparse.Namespace) -> int:
    """The ``evaluate`` command."""
    from cigeval.results import load_price_table

    if not args.samples.is_file():
        raise UsageError(f"samples file not found: {args.samples}")
    load_tasks_files(args)
    config, run_config, ensemble = build_configs(args)
    engine = build_config(args, EngineConfig)
    options = build_config(args, RunOptions)
    if engine.engine == "ray" and run_config.batch:
        raise UsageError(
            "--batch and --engine ray cannot be combined: a provider batch gathers the calls "
            "of one process; use --batch on one machine, or --engine ray with direct calls"
        )
    evaluator = make_evaluator(args, config, run_config, ensemble)
    try:
        prices = load_price_table(args.price_table) if args.price_table else None
        result = run_samples(
            evaluator,
            args.samples,
            args.out,
            options=options,
            engine=engine,
            prices=prices,
            quiet=args.quiet,
        )
    except PreflightError as exc:
        raise UsageError(f"preflight failed: {exc}") from None
    except CigevalError as exc:  # the results file in use or unwritable, a bad engine setup
        raise UsageError(str(exc)) from None
    print(result.render(), file=sys.stderr)
    return result.exit_status
