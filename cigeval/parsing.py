"""Lenient-but-strict parsing of model replies.

Lenient about form (fenced JSON, prose around it, smart quotes, "8/10", "7.5") and strict
about content (out-of-range scores, missing keys and unknown ids are errors, never guesses).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from cigeval.errors import ParseError

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
#: Runs of too deeply nested brackets skipped before a reply is declared to hold no JSON.
_MAX_DEEP_RUNS = 4


def _candidates(text: str) -> list[str]:
    """Strings that may hold the JSON value, most likely first."""
    cleaned = text.translate(_SMART_QUOTES).strip()
    found = [m.group(1).strip() for m in _FENCE.finditer(cleaned)]
    found.append(cleaned)
    return found


def _scan_json(text: str, want: type | tuple[type, ...]) -> Any:
    """The first JSON value (object or array) that appears anywhere in ``text``."""
    decoder = json.JSONDecoder()
    index, too_deep = 0, 0
    while index < len(text):
        if text[index] not in "{[":
            index += 1
            continue
        try:
            value, _ = decoder.raw_decode(text, index)
        except RecursionError:
            # Nested deeper than the decoder can follow (a degenerate reply such as "[[[[...").
            # Starting again one bracket further in would cost as much each time (quadratic),
            # so skip the whole run of brackets, and give up after a few such runs.
            too_deep += 1
            if too_deep >= _MAX_DEEP_RUNS:
                break
            while index < len(text) and text[index] in "{[ \t\r\n":
                index += 1
            continue
        except ValueError:  # JSONDecodeError, or an integer past Python's digit limit
            index += 1
            continue
        if want is None or isinstance(value, want):
            return value
        index += 1
    raise ValueError("no JSON value found")


def extract_json(text: str, want: type | None = None) -> Any:
    """Extract a JSON value from a reply (fenced, bare, or surrounded by prose).

    ``want`` (dict or list) restricts what is accepted; by default an object or an array.
    Raises :class:`ParseError`.
    """
    accepted: type | tuple[type, ...] = want if want is not None else (dict, list)
    if not text or not text.strip():
        raise ParseError("the reply is empty", reply=text)
    for candidate in _candidates(text):
        try:
            value = json.loads(candidate)
            if isinstance(value, accepted):
                return value
        except (ValueError, RecursionError):
            pass
        try:
            return _scan_json(candidate, accepted)
        except ValueError:
            continue
    kind = {dict: "a JSON object", list: "a JSON list"}.get(want, "a JSON object or list")  # type: ignore[call-overload]
    raise ParseError(f"the reply does not contain {kind}", reply=text)


def parse_score(value: Any, low: float = 0, high: float = 10, *, integer: bool = False) -> float:
    """Turn ``8``, ``"8"``, ``"8/10"``, ``"7.5"``, ``"8 out of 10"`` into a number in range.

    A fraction with another denominator (``"4/5"``) is rescaled to ``high``. Raises
    :class:`ParseError` when the value is missing, not a number, or out of range.
    """
    number: float
    if isinstance(value, bool) or value is None:
        raise ParseError(f"score {value!r} is not a number")
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            raise ParseError(
                f"score is outside the allowed range {low:g}-{high:g} (a huge number)"
            ) from None
    elif isinstance(value, list) and len(value) == 1:
        return parse_score(value[0], low, high, integer=integer)
    elif isinstance(value, str):
        text = value.strip()
        fraction = re.fullmatch(rf"({_NUMBER})\s*(?:/|out of)\s*({_NUMBER})", text)
        plain = re.fullmatch(rf"({_NUMBER})(?:\s*(?:points?|pts?)?)?", text)
        if fraction:
            numerator, denominator = float(fraction.group(1)), float(fraction.group(2))
            if denominator <= 0:
                raise ParseError(f"score {value!r} has a zero denominator")
            number = numerator if denominator == high else numerator / denominator * high
        elif plain:
            number = float(plain.group(1))
        else:
            raise ParseError(f"score {value!r} is not a number")
    else:
        raise ParseError(f"score {value!r} is not a number")
    if math.isnan(number) or not low <= number <= high:
        raise ParseError(f"score {number:g} is outside the allowed range {low:g}-{high:g}")
    if integer and number != int(number):
        raise ParseError(f"score {number:g} must be an integer between {low:g} and {high:g}")
    return number


_LOOSE_SCORE = re.compile(
    rf"[\"']?score[\"']?\s*[:=]\s*[\"']?({_NUMBER}(?:\s*(?:/|out of)\s*{_NUMBER})?)"
    r"(?!\d|\.\d|[eE][-+]?\d)",  # not the prefix of a longer number such as 1e999
    re.IGNORECASE,
)
_LOOSE_REASONING = re.compile(
    r"[\"']?reasoning[\"']?\s*[:=]\s*[\"']?(.+)", re.IGNORECASE | re.DOTALL
)


def parse_judgement(text: str, low: float = 0, high: float = 10) -> tuple[float, str]:
    """Parse a ``{"score": ..., "reasoning": ...}`` reply into (score, reasoning).

    Falls back to ``score: 8`` / ``8/10`` written in prose when there is no JSON object.
    """
    try:
        data = extract_json(text, dict)
    except ParseError:
        data = None
    if data is not None:
        lowered = {str(k).strip().lower(): v for k, v in data.items()}
        if "score" not in lowered:
            raise ParseError('the JSON object has no "score" key', reply=text)
        score = parse_score(lowered["score"], low, high)
        reasoning = lowered.get("reasoning", lowered.get("reason", ""))
        return score, str(reasoning if reasoning is not None else "").strip()
    match = _LOOSE_SCORE.search(text) or re.search(
        rf"\b({_NUMBER}\s*(?:/|out of)\s*{high:g})\b", text
    )
    if match is None:
        raise ParseError(
            'no score found; expected JSON like {"score": 7, "reasoning": "..."}', text
        )
    score = parse_score(match.group(1), low, high)
    reason_match = _LOOSE_REASONING.search(text)
    reasoning = reason_match.group(1).strip().strip("\"'}") if reason_match else text.strip()
    return score, reasoning


def parse_yes_no(value: Any) -> bool:
    """``yes``/``no``/``true``/``false``/booleans -> bool; anything else is a ParseError."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"yes", "y", "true", "1", "是"}:
        return True
    if text in {"no", "n", "false", "0", "none", "否", ""}:
        return False
    raise ParseError(f"expected yes or no, got {value!r}")
