"""A results record's own human rating (its ``human`` field), read without pandas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cigeval.errors import InputError


def record_human_score(record: Mapping[str, Any], dimension: str = "SC") -> float | None:
    """The record's own human rating for ``dimension`` on [0, 1], or None when it has none.

    ``human`` may be a number (used for every dimension) or a dict by dimension. A value that
    is not a number on [0, 1] is an :class:`InputError`.
    """
    human = record.get("human")
    value = human.get(dimension) if isinstance(human, dict) else human
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InputError(f"human rating {value!r} is not a number on [0, 1]")
    return float(value)
