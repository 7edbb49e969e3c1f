"""Command line: ``cigeval evaluate``, ``validate``, ``meta``, ``tasks`` and ``rubrics``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cigeval.cli_common import EXIT_OK, EXIT_USAGE, UsageError
from cigeval.cli_evaluate import add_evaluate_subparser, run_evaluate
from cigeval.cli_validate import add_validate_subparser, run_validate
from cigeval.meta.cli import add_meta_subparser, run_meta


def run_tasks(args: argparse.Namespace) -> int:
    """The ``tasks`` command: the seven tasks and their sub-questions."""
    from cigeval.tasks import TASK_IDS, get_task

    for task_id in TASK_IDS:
        spec = get_task(task_id)
        print(f"{task_id}: {spec.title}")
        optional = [*spec.optional_text_fields, *(f"images.{r}" for r in spec.optional_image_roles)]
        print(
            f"  needs: {', '.join(spec.text_fields)}; "
            + ", ".join(f"images.{r}" for r in spec.image_roles)
            + (f"; optional: {', '.join(optional)}" if optional else "")
        )
        for q in spec.sub_questions:
            print(f"  - {q.id}: {q.question} [shows {', '.join(q.image_roles)}]")
    return EXIT_OK


def run_rubrics(args: argparse.Namespace) -> int:
    """The ``rubrics`` command: registered rubrics."""
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
    subparsers.add_parser("tasks", help="list the tasks and their sub-questions")
    subparsers.add_parser("rubrics", help="list the rubrics")
    add_meta_subparser(subparsers)
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
    }
    try:
        return handlers[args.command](args)
    except UsageError as exc:
        print(f"cigeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cigeval: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
