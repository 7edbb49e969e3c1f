"""The ``cigeval validate`` command: check a samples file without calling any model."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from cigeval.cli._common import EXIT_OK, EXIT_SAMPLE_ERRORS, UsageError
from cigeval.cli._tasks_files import add_tasks_file_flag, load_tasks_files
from cigeval.config import EvalConfig
from cigeval.errors import CigevalError
from cigeval.terminal import safe_text


def configure_validate_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``validate``."""
    p.description = (
        "Read SAMPLES.jsonl as `evaluate` would, check each sample's task, fields and images "
        "for the chosen rubric, and print the report on stdout: one line per invalid sample "
        "(line number, id, every problem), then a count. Exit status 0 when all samples are "
        "valid, 1 when some are not, 2 for usage errors."
    )
    p.add_argument("samples", type=Path, help="samples JSONL (image paths relative to it)")
    p.add_argument(
        "--rubric",
        default=EvalConfig.model_fields["rubric"].default,
        help="rubric whose needs are checked (default: %(default)s)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per invalid sample ({"line", "id", "error"}), then '
        '{"summary": {"valid", "invalid", "tasks"}}',
    )
    add_tasks_file_flag(p)


def check_line(line: Any, rubric: Any) -> str | None:
    """The problem with one SampleLine, or None when it can be evaluated."""
    from cigeval.sample import load_sample_images

    if line.sample is None:
        return str(line.error)
    try:
        rubric.validate(line.sample)
        load_sample_images(line.sample)
    except CigevalError as exc:
        return str(exc)
    return None


def _without_line_prefix(problem: str, line_number: int) -> str:
    """The problem text without a leading ``line N:`` (the report adds it once)."""
    return problem.removeprefix(f"line {line_number}: ")


def run_validate(args: argparse.Namespace) -> int:
    """The ``validate`` command: the report on stdout, the exit status by its outcome."""
    from cigeval.rubrics import get_rubric
    from cigeval.runs.guards import samples_file_problem
    from cigeval.sample import iter_samples_file

    problem = samples_file_problem(args.samples)
    if problem is not None:
        raise UsageError(problem)
    load_tasks_files(args)
    try:
        rubric = get_rubric(args.rubric)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    counts: Counter[str] = Counter()
    tasks: Counter[str] = Counter()
    seen: set[str] = set()
    for line in iter_samples_file(args.samples):
        problem = check_line(line, rubric)
        if problem is None and line.sample_id in seen:
            problem = f"sample {line.sample_id!r}: id repeated on line {line.line_number}"
        seen.add(line.sample_id)
        if problem is None:
            counts["valid"] += 1
            tasks[line.sample.task if line.sample else "?"] += 1
            continue
        counts["invalid"] += 1
        problem = _without_line_prefix(problem, line.line_number)
        if args.json:
            print(json.dumps({"line": line.line_number, "id": line.sample_id, "error": problem}))
        else:
            print(f"line {line.line_number}: {safe_text(problem)}")
    if args.json:
        summary = {"valid": counts["valid"], "invalid": counts["invalid"], "tasks": dict(tasks)}
        print(json.dumps({"summary": summary}))
    else:
        per_task = ", ".join(f"{task} {n}" for task, n in sorted(tasks.items()))
        print(
            f"{counts['valid']} valid, {counts['invalid']} invalid sample(s)"
            + (f" ({per_task})" if per_task else "")
        )
    return EXIT_OK if counts["invalid"] == 0 else EXIT_SAMPLE_ERRORS
