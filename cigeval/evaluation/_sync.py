"""Running a coroutine to completion from synchronous code, inside Jupyter too."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run a coroutine to completion, also from inside a running loop (e.g. Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaitable)  # type: ignore[arg-type]
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # e.g. the run's call counter (runs/progress.py)

    def target() -> None:
        try:
            box["value"] = context.run(asyncio.run, awaitable)  # type: ignore[arg-type]
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="cigeval-run")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    result: T = box["value"]
    return result
