"""Warnings said once per process, in the caller's words.

A warning about a run's settings (the ``paper`` method's scene graphs, its paraphrased
prompts, a provider that takes no seed) is true of every Evaluator a script builds and of
every sample it judges: said each time, it buries what else the log says. :func:`warn_once`
says each one the first time only, keyed by what it is about. The message is written by the
caller in its own vocabulary (:func:`cigeval._caller.in_callers_words`: ``--tools`` while a
``cigeval`` command runs, ``tools=`` from Python and inside inspect), so the one time it is
said it names the option the reader can actually set.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

_said: set[str] = set()
_lock = threading.Lock()


def warn_once(logger: logging.Logger, key: str, message: str | Callable[[], str]) -> bool:
    """Log ``message`` as a warning on ``logger`` unless a warning keyed ``key`` was logged
    already in this process; True when it was logged now.

    ``message`` may be a function, called only when the warning is said (its words are then
    chosen in the caller's context at that moment).
    """
    with _lock:
        if key in _said:
            return False
        _said.add(key)
    logger.warning("%s", message() if callable(message) else message)
    return True


def already_warned(key: str) -> bool:
    """Whether the warning keyed ``key`` was said in this process."""
    with _lock:
        return key in _said


def forget_warnings() -> None:
    """Forget every warning said, so each is said again once (for tests)."""
    with _lock:
        _said.clear()
