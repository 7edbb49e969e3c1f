"""The task registry: built-in tasks, tasks added in Python or from files, and plugins."""

from __future__ import annotations

from cigeval.errors import ConfigError
from cigeval.registry import Registry
from cigeval.tasks.spec import TaskSpec


def _as_task(item: object) -> TaskSpec:
    if callable(item) and not isinstance(item, TaskSpec):
        item = item()
    if not isinstance(item, TaskSpec):
        raise ConfigError(f"{item!r} is not a TaskSpec")
    return item


TASKS: Registry[TaskSpec] = Registry("task", entry_point_group="cigeval.tasks", coerce=_as_task)


def register_task(spec: TaskSpec, *, replace: bool = False) -> TaskSpec:
    """Make a task available to samples (``"task": spec.id``), the CLI and every rubric."""
    checked = _as_task(spec)
    return TASKS.register(checked.id, checked, replace=replace)


def get_task(task_id: str) -> TaskSpec:
    """The TaskSpec registered as ``task_id``; ConfigError listing the task ids otherwise."""
    return TASKS.get(task_id)


def task_names() -> list[str]:
    """Ids of every registered task: the seven built-ins first."""
    return TASKS.names()
