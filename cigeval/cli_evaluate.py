"""The ``cigeval evaluate`` command: arguments, settings, and the resumable run."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, get_args

from cigeval.cli_common import EXIT_OK, EXIT_SAMPLE_ERRORS, UsageError
from cigeval.combine import COMBINE_RULES
from cigeval.config import Aggregate, DifferenceConfig, EvalConfig, GroundingConfig, RunConfig
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
    p.add_argument(
        "--rubric", default="cigeval", help="cigeval (default), viescore, lmm_score, ..."
    )
    p.add_argument(
        "--rubric-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="rubric-specific setting, e.g. mode=online (repeatable)",
    )
    g = p.add_argument_group("judging")
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--max-tokens", type=int, default=1024)
    g.add_argument("--max-rounds", type=int, default=1, help="tool rounds per sub-question")
    g.add_argument("--max-parse-retries", type=int, default=2)
    g.add_argument("--aggregate", default="min", choices=get_args(Aggregate))
    g.add_argument("--tools", help="comma-separated tool names offered to the agent ('' = none)")
    g.add_argument("--grounding-checkpoint", default=GroundingConfig().checkpoint)
    g.add_argument("--box-threshold", type=float, default=GroundingConfig().box_threshold)
    g.add_argument("--text-threshold", type=float, default=GroundingConfig().text_threshold)
    g.add_argument("--diff-threshold", type=int, default=DifferenceConfig().threshold)
    g.add_argument("--prompt-dir", help="folder of .j2 templates replacing built-in ones")
    e = p.add_argument_group("ensembles")
    e.add_argument(
        "--samples-per-model",
        type=int,
        default=1,
        help="judgments per model per sample (extra ones at --ensemble-temperature)",
    )
    e.add_argument("--ensemble-temperature", type=float, default=0.7)
    e.add_argument(
        "--combine",
        default="mean",
        choices=COMBINE_RULES,
    )
    e.add_argument("--combine-level", default="sub_question", choices=["sub_question", "final"])
    e.add_argument(
        "--prompt-variant",
        action="append",
        default=[],
        metavar="DIR",
        help="a prompt variant (template folder) judged by every model; repeatable",
    )
    r = p.add_argument_group("running")
    r.add_argument("--concurrency", type=int, default=8, help="samples evaluated at once")
    r.add_argument("--rpm", type=float, help="requests-per-minute limit")
    r.add_argument("--tpm", type=float, help="tokens-per-minute limit")
    r.add_argument("--timeout", type=float, default=120.0, help="seconds per model call")
    r.add_argument("--max-retries", type=int, default=6, help="retries of a failed call")
    r.add_argument(
        "--retry-backoff",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="wait before the first retry, doubled each retry (Retry-After takes precedence)",
    )
    r.add_argument("--cache-dir", type=Path, help="response cache (default: per-user cache dir)")
    r.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
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


def _parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--rubric-option expects KEY=VALUE, got {pair!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _configs(args: argparse.Namespace) -> tuple[EvalConfig, RunConfig, Any]:
    from cigeval.ensemble import EnsembleConfig

    tools = (
        None if args.tools is None else tuple(t.strip() for t in args.tools.split(",") if t.strip())
    )
    try:
        config = EvalConfig(
            rubric=args.rubric,
            temperature=args.temperature,
            seed=args.seed,
            max_tokens=args.max_tokens,
            max_rounds=args.max_rounds,
            max_parse_retries=args.max_parse_retries,
            aggregate=args.aggregate,
            tools=tools,
            grounding=GroundingConfig(
                checkpoint=args.grounding_checkpoint,
                box_threshold=args.box_threshold,
                text_threshold=args.text_threshold,
            ),
            difference=DifferenceConfig(threshold=args.diff_threshold),
            rubric_options=_parse_options(args.rubric_option),
            prompt_dir=args.prompt_dir,
        )
        run_config = RunConfig(
            concurrency=args.concurrency,
            requests_per_minute=args.rpm,
            tokens_per_minute=args.tpm,
            timeout_s=args.timeout,
            max_retries=args.max_retries,
            retry_backoff_s=args.retry_backoff,
            use_cache=not args.no_cache,
            **({"cache_dir": args.cache_dir} if args.cache_dir else {}),
        )
        ensemble = EnsembleConfig(
            samples_per_model=args.samples_per_model,
            temperature=args.ensemble_temperature,
            combine=args.combine,
            level=args.combine_level,
            prompt_dirs=tuple(args.prompt_variant),
        )
    except (ValueError, CigevalError) as exc:
        raise UsageError(str(exc)) from None
    return config, run_config, ensemble


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

    from cigeval.results_io import ResultsWriter
    from cigeval.runner import Evaluator
    from cigeval.summary import RunSummary, load_price_table

    if not args.samples.is_file():
        raise UsageError(f"samples file not found: {args.samples}")
    config, run_config, ensemble = _configs(args)
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
