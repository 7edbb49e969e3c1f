"""Token counts as a server reports them, checked before anything adds or prices them."""

from __future__ import annotations

from cigeval.backends.observers import current_observers
from cigeval.messages import Usage

#: The most tokens one call may report for its prompt or its reply; more is not a real figure.
MAX_TOKENS_PER_CALL = 10**9


def token_count(value: object) -> int | None:
    """``value`` as a token count: a whole number from 0 to :data:`MAX_TOKENS_PER_CALL`
    (an integral float counts), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_TOKENS_PER_CALL:
        return value
    return None


def checked_usage(prompt: object, completion: object) -> Usage:
    """The usage of a reply whose server reported ``prompt`` and ``completion`` tokens.

    A figure that is absent counts 0; one that is not a token count (negative, absurd, a
    string, ...) counts 0 too and is reported to the call's observers as a note, so the
    sample keeps its reply and no cost goes negative or absurd.
    """
    counts = []
    for name, value in (("prompt_tokens", prompt), ("completion_tokens", completion)):
        count = token_count(value) if value is not None else 0
        if count is None:
            shown = repr(value)[:40]
            current_observers().note(
                f"the server reported {name}={shown}, not a token count from 0 to "
                f"{MAX_TOKENS_PER_CALL:,}; it was ignored (counted as 0)"
            )
            count = 0
        counts.append(count)
    return Usage(*counts)
