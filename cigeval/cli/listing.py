"""The ``cigeval tasks`` and ``cigeval rubrics`` commands: what can be named on the command line."""

from __future__ import annotations

import argparse

from cigeval.cli._common import EXIT_OK
from cigeval.cli._tasks_files import add_tasks_file_flag, load_tasks_files
from cigeval.terminal import safe_text


def configure_tasks_parser(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``tasks``."""
    parser.description = (
        "List every registered task (built-in, from --tasks-file or from a --plugin) with "
        "the fields and images its samples need and its sub-questions."
    )
    add_tasks_file_flag(parser)


def run_tasks(args: argparse.Namespace) -> int:
    """The ``tasks`` command: every registered task and its sub-questions, on stdout."""
    from cigeval.tasks.registry import get_task, task_names

    load_tasks_files(args)
    for task_id in task_names():
        spec = get_task(task_id)
        print(f"{safe_text(task_id)}: {safe_text(spec.title)}")
        optional = [*spec.optional_text_fields, *(f"images.{r}" for r in spec.optional_image_roles)]
        print(
            f"  needs: {', '.join(spec.text_fields) or 'no text'}; "
            + ", ".join(f"images.{r}" for r in spec.image_roles)
            + (f"; optional: {', '.join(optional)}" if optional else "")
        )
        for q in spec.sub_questions:
            print(safe_text(f"  - {q.id}: {q.question} [shows {', '.join(q.image_roles)}]"))
    return EXIT_OK


def configure_rubrics_parser(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``rubrics`` (none but ``--plugin``)."""
    parser.description = "List every registered rubric (judging scheme) with its description."


def run_rubrics(args: argparse.Namespace) -> int:
    """The ``rubrics`` command: every registered rubric, on stdout."""
    from cigeval.rubrics import get_rubric, rubric_names

    for name in rubric_names():
        print(safe_text(f"{name}: {get_rubric(name).description}"))
    return EXIT_OK
