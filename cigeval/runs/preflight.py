"""The preflight step of a run: check the judges and tools once, before the first sample."""

from __future__ import annotations

import time
from collections.abc import Callable

from cigeval.terminal import echo, safe_text


def preflight_step(check: Callable[[], list[str]], quiet: bool, label: str = "preflight") -> None:
    """Run ``check`` (e.g. ``Evaluator.preflight``) and print what it checked under ``label``
    on stderr (unless ``quiet``). A failed check raises :class:`~cigeval.errors.PreflightError`
    naming the fix."""
    started = time.perf_counter()
    checks = check()
    if checks and not quiet:
        elapsed = time.perf_counter() - started
        echo(f"{label} ({elapsed:.1f} s): {'; '.join(safe_text(c) for c in checks)}")
