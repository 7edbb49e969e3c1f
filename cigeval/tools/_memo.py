"""Run an expensive coroutine once per key, even when several sub-questions ask at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_once(memo: dict[str, Any], key: str, make: Callable[[], Awaitable[T]]) -> T:
    """The result of ``make()`` for ``key``, computed at most once per ``memo``.

    The first caller stores a task in ``memo``; concurrent and later callers await that same
    task. A failed task is removed so a later request can try again. One waiter being
    cancelled does not cancel the shared work the others wait on.
    """
    task = memo.get(key)
    if task is None:
        task = asyncio.ensure_future(make())
        memo[key] = task
        task.add_done_callback(lambda done: _forget_failure(memo, key, done))
    result: T = await asyncio.shield(task)
    return result


def _forget_failure(memo: dict[str, Any], key: str, task: asyncio.Future[Any]) -> None:
    if (task.cancelled() or task.exception() is not None) and memo.get(key) is task:
        del memo[key]
