"""Task specifications: the seven built-in tasks and a registry for more."""

from cigeval.tasks import builtin as _builtin  # noqa: F401  (registers the built-ins)
from cigeval.tasks.ids import IMAGENHUB_TASK_NAMES, PAPER_TASK_ORDER, TASK_IDS, TaskId
from cigeval.tasks.spec import SubQuestion, TaskSpec, get_task, register_task

__all__ = [
    "IMAGENHUB_TASK_NAMES",
    "PAPER_TASK_ORDER",
    "TASK_IDS",
    "SubQuestion",
    "TaskId",
    "TaskSpec",
    "get_task",
    "register_task",
]
