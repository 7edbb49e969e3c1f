"""Tasks: what a sample of each kind needs and the sub-questions it is judged on.

The seven tasks of the paper are built in; add your own with :func:`register_task` (a
:class:`TaskSpec`), from a JSON/YAML file with :func:`load_tasks_file` (``--tasks-file`` on
the command line), or from a plugin package's ``cigeval.tasks`` entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports
from cigeval.tasks import builtin as _builtin  # noqa: F401  (registers the built-ins)
from cigeval.tasks.ids import IMAGENHUB_TASK_NAMES, PAPER_TASK_ORDER, TASK_IDS, TaskId
from cigeval.tasks.registry import get_task, register_task, task_names
from cigeval.tasks.spec import SubQuestion, TaskSpec

if TYPE_CHECKING:
    from cigeval.tasks.files import load_tasks_file, read_tasks_file

__all__ = [
    "IMAGENHUB_TASK_NAMES",
    "PAPER_TASK_ORDER",
    "TASK_IDS",
    "SubQuestion",
    "TaskId",
    "TaskSpec",
    "get_task",
    "load_tasks_file",
    "read_tasks_file",
    "register_task",
    "task_names",
]


#: The task-file reader (pydantic) loads on first use, so listing tasks starts fast.
_LAZY = {"load_tasks_file": ".files", "read_tasks_file": ".files"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
