"""The ``cigeval`` command: evaluate, validate, tasks, rubrics, meta, probe, finetune, report,
compare."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cigeval.cli._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError
from cigeval.cli._flags import add_tasks_file_flag, load_tasks_files
from cigeval.cli.compare import add_compare_subparser, run_compare
from cigeval.cli.evaluate import add_evaluate_subparser, run_evaluate
from cigeval.cli.finetune import add_finetune_subparser, run_finetune
from cigeval.cli.meta import add_meta_subparser, run_meta
from cigeval.cli.probe import add_probe_subparser, run_probe
from cigeval.cli.report import add_report_subparser, run_report
from cigeval.cli.validate import add_validate_subparser, run_validate


def run_tasks(args: argparse.Namespace) -> int:
    """The ``tasks`` command: every registered task and its sub-questions."""
    from cigeval.tasks import get_task, task_names

    load_tasks_files(args)
    for task_id in task_names():
        spec = get_task(task_id)
        print(f"{task_id}: {spec.title}")
        optional = [*spec.optional_text_fields, *(f"images.{r}" for r in spec.optional_image_roles)]
        print(
            f"  needs: {', '.join(spec.text_fields) or 'no text'}; "
            + ", ".join(f"images.{r}" for r in spec.image_roles)
            + (f"; optional: {', '.join(optional)}" if optional else "")
        )
        for q in spec.sub_questions:
            print(f"  - {q.id}: {q.question} [shows {', '.join(q.image_roles)}]")
    return EXIT_OK


def run_rubrics(args: argparse.Namespace) -> int:
    """The ``rubrics`` command: every registered rubric."""
    from cigeval.rubrics import get_rubric, rubric_names

    for name in rubric_names():
        print(f"{name}: {get_rubric(name).description}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``cigeval`` command."""
    parser = argparse.ArgumentParser(prog="cigeval", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_evaluate_subparser(subparsers)
    add_validate_subparser(subparsers)
    tasks = subparsers.add_parser("tasks", help="list the tasks and their sub-questions")
    add_tasks_file_flag(tasks)
    subparsers.add_parser("rubrics", help="list the rubrics")
    add_meta_subparser(subparsers)
    add_probe_subparser(subparsers)
    add_finetune_subparser(subparsers)
    add_report_subparser(subparsers)
    add_compare_subparser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cigeval`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {
        "evaluate": run_evaluate,
        "validate": run_validate,
        "tasks": run_tasks,
        "rubrics": run_rubrics,
        "meta": run_meta,
        "probe": run_probe,
        "finetune": run_finetune,
        "report": run_report,
        "compare": run_compare,
    }
    try:
        return handlers[args.command](args)
    except UsageError as exc:
        print(f"cigeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cigeval: interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
