"""Whose words a piece of advice in an error is written in: the command line's flags
(``--tools 'Difference,Scene Graph'``) while a ``cigeval`` command runs, Python's keywords
(``tools=["Difference", "Scene Graph"]``) otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_FROM_COMMAND_LINE: ContextVar[bool] = ContextVar("cigeval_from_command_line", default=False)


@contextmanager
def command_line() -> Iterator[None]:
    """Within this block (a ``cigeval`` command), advice names command-line flags."""
    token = _FROM_COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _FROM_COMMAND_LINE.reset(token)


def from_command_line() -> bool:
    """Whether a ``cigeval`` command is running (in this context)."""
    return _FROM_COMMAND_LINE.get()


def in_callers_words(flag: str, keyword: str) -> str:
    """``flag`` (the command line's way to say it) inside a command, else ``keyword``."""
    return flag if from_command_line() else keyword
