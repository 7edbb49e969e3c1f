"""The ``cigeval evaluate`` command: arguments and settings; the run itself is
:func:`cigeval.runs.run_samples`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cigeval.cli._common import (
    EXIT_SAMPLE_ERRORS,
    UsageError,
    add_calibration_flags,
    make_evaluator,
)
from cigeval.cli._dataset import add_dataset_flags, add_folder_flags, samples_source
from cigeval.cli._flags import add_config_flags, build_config, judge_configs
from cigeval.cli._help import split_help
from cigeval.cli._plugins import plugins_given
from cigeval.cli._tasks_files import add_tasks_file_flag, load_tasks_files
from cigeval.cli._track import add_track_flags, trackers_from_args
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.engines.settings import EngineConfig
from cigeval.errors import CigevalError, PreflightError
from cigeval.redact import redact_credentials
from cigeval.terminal import echo, safe_text

if TYPE_CHECKING:
    from cigeval.evaluation import Evaluator

#: The flags ``cigeval evaluate --help`` shows; every other flag is listed by ``--help-all``
#: in its group (cigeval/cli/_help.py), so a new flag shows up there with no change here.
COMMON_FLAGS = (
    "--model",
    "--base-url",
    "--out",
    "--dataset",
    "--rubric",
    "--tools",
    "--grounding-checkpoint",
    "--max-tokens",
    "--concurrency",
    "--limit",
    "--overwrite",
    "--retry-errors",
    "--no-preflight",
    "--quiet",
    "--plugin",
)


def configure_evaluate_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``evaluate``: the common ones, then the config fields' flags."""
    p.usage = (
        "cigeval evaluate (SAMPLES.jsonl | --dataset NAME_OR_PATH --columns MAPPING | "
        "--from FORMAT DIR) "
        "--model MODEL --out RESULTS.jsonl [options]"
    )
    p.description = (
        "Judge every sample of SAMPLES.jsonl (or of a Hugging Face dataset, --dataset; a "
        "benchmark's folder, --from) and "
        "append one record per sample to --out; rerunning with the same --out and settings "
        "resumes (docs/runs.md)."
    )
    p.epilog = (
        "exit status: docs/exit-statuses.md has the table. 0 all ok; 1 some samples ended "
        "in error; 2 nothing judged (usage, preflight, --out in use or with other settings); "
        "3 circuit breaker (server down); 130/143 interrupted. After 3, 130 or 143 rerun to "
        "finish."
    )
    p.add_argument(
        "samples",
        type=Path,
        nargs="?",
        help="samples JSONL (image paths relative to it); or --dataset or --from",
    )
    p.add_argument(
        "--model",
        action="append",
        required=True,
        help="judge model: openai:, anthropic:, gemini:, azure:, litellm: or hf: spec "
        "(docs/judges.md); repeat for an ensemble",
    )
    p.add_argument(
        "--base-url", help="the judge's server URL, as '@URL' in --model (else $OPENAI_BASE_URL)"
    )
    p.add_argument("--out", type=Path, required=True, help="results JSONL (appended, resumable)")
    add_dataset_flags(p)
    add_folder_flags(p)
    add_tasks_file_flag(p)
    add_config_flags(p.add_argument_group("judging"), EvalConfig)
    add_config_flags(p.add_argument_group("ensembles"), EnsembleConfig)
    add_config_flags(p.add_argument_group("engine (docs/ray.md)"), EngineConfig)
    r = p.add_argument_group("running")
    add_config_flags(r, RunConfig)
    r.add_argument("--price-table", type=Path, help="JSON: model -> USD per 1M prompt/completion")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    add_calibration_flags(r)
    add_track_flags(p)
    split_help(p, COMMON_FLAGS)  # keep last: flags added after it would show in --help


def default_image_dir(out: Path) -> Path:
    """Where a run keeps the images it showed the judge: ``results.jsonl`` -> ``results.images``."""
    return out.with_name(out.stem + ".images")


def default_batch_state(out: Path) -> Path:
    """Where ``--batch`` records its batches: ``results.jsonl`` -> ``results.batches.json``."""
    return out.with_name(out.stem + ".batches.json")


def refuse_out_over_cli_inputs(args: argparse.Namespace, evaluator: Evaluator) -> None:
    """UsageError when ``--out`` or a file derived from it is a ``--tasks-file`` or a
    ``--plugin`` file (the samples file is checked by the run itself)."""
    from cigeval.runs.guards import plugin_files, refuse_results_over_inputs
    from cigeval.runs.run import written_paths

    inputs = [("tasks file", Path(p)) for p in getattr(args, "tasks_file", [])]
    inputs += [("plugin", p) for p in plugin_files(plugins_given(args))]
    try:
        refuse_results_over_inputs(written_paths(evaluator, args.out), inputs)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None


def run_evaluate(args: argparse.Namespace) -> int:
    """The ``evaluate`` command."""
    from cigeval.results import load_price_table
    from cigeval.runs.guards import NoSamples
    from cigeval.runs.run import run_samples

    load_tasks_files(args)
    samples = samples_source(args)
    config, run_config, ensemble = judge_configs(
        args, image_dir=default_image_dir(args.out), batch_state=default_batch_state(args.out)
    )
    engine = build_config(args, EngineConfig)
    if engine.engine == "ray" and run_config.batch:
        raise UsageError(
            "--batch and --engine ray cannot be combined: a provider batch gathers the calls "
            "of one process; use --batch on one machine, or --engine ray with direct calls"
        )
    evaluator = make_evaluator(args, config, run_config, ensemble)
    refuse_out_over_cli_inputs(args, evaluator)
    trackers = trackers_from_args(args)
    try:
        prices = load_price_table(args.price_table) if args.price_table else None
        result = run_samples(
            evaluator,
            samples,
            args.out,
            options=run_config,
            engine=engine,
            prices=prices,
            callbacks=trackers,
            quiet=args.quiet,
        )
    except NoSamples as exc:
        echo(f"cigeval evaluate: {safe_text(exc, lines=True)}")
        return EXIT_SAMPLE_ERRORS
    except PreflightError as exc:
        raise UsageError(f"preflight failed: {exc}") from None
    except CigevalError as exc:  # the results file in use or unwritable, a bad engine setup
        raise UsageError(str(exc)) from None
    echo(redact_credentials(result.render()))
    written = sum(result.summary.statuses.values())
    echo(f"wrote {written} record(s) to {safe_text(args.out)}")
    return result.exit_status
