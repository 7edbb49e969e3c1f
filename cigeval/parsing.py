"""Lenient-but-strict parsing of model replies.

Lenient about form (fenced JSON, prose around it, smart quotes, "8/10", "7.5") and strict
about content (out-of-range scores, missing keys and unknown ids are errors, never guesses).
A value is only ever read from a complete JSON value: a reply that ends inside one (``{"score":
"1``, as a reply cut at the token limit does) is an :class:`UnfinishedJSON` error, never the
score 1, and nothing nested inside such a fragment is taken for an answer either.

Strict about ambiguity too: a reply that gives two answers (a key repeated with another value,
two different JSON objects, two different scores in prose) is an :class:`AmbiguousReply`,
never one of them picked silently; like every ParseError it is asked again.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from cigeval.errors import ParseError

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
#: Runs of too deeply nested brackets skipped before a reply is declared to hold no JSON.
_MAX_DEEP_RUNS = 4
#: The first window (in characters) a JSON value is looked for in; doubled while too short.
_FIRST_WINDOW = 64
#: Failed attempts may read this many times the reply's length (plus _BUDGET_FLOOR) in all
#: before the reply is declared to hold no JSON: what keeps a hostile reply linear.
_BUDGET_FACTOR = 8
_BUDGET_FLOOR = 100_000
#: How close to a window's end a parse error may be caused by the cut (a number, a literal).
_CUT_MARGIN = 32
_OPENERS = re.compile(r"[{\[]")
#: What may follow the place a decoder stopped when the text simply ended inside a value:
#: nothing, or the start of a number or of true/false/null.
_CUT_TAIL = re.compile(r"[-+0-9.eE]*|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?")
_CUT_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,3}")


class UnfinishedJSON(ParseError):
    """The reply ends inside a JSON value (an object or list opened and never closed).

    Such a reply was cut off (at the token limit, by a filter, by a proxy): nothing in it is
    read, not even a complete value nested inside the fragment.
    """


class AmbiguousReply(ParseError):
    """The reply gives two different answers: a JSON key repeated with another value, two
    different JSON objects (or lists), or two different scores; the message says which."""


def _no_conflicting_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object hook for the JSON decoder: a key repeated with another value is ambiguous
    (the decoder would keep the last one silently); repeated with the same value it is not."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found and found[key] != value:
            raise AmbiguousReply(
                f"the reply repeats the key {key!r} with different values "
                f"({_short(found[key])} and {_short(value)}): give each key once"
            )
        found[key] = value
    return found


#: The decoder of every reply (one instance: making a decoder builds its scanner anew).
_DECODER = json.JSONDecoder(object_pairs_hook=_no_conflicting_keys)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _ends_inside(exc: json.JSONDecodeError, text: str) -> bool:
    """True when decoding ``text`` failed only because the text ended inside the value."""
    if exc.msg.startswith("Unterminated string"):
        return True
    tail = text[exc.pos :].strip()
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return _CUT_ESCAPE.fullmatch(tail) is not None
    return _CUT_TAIL.fullmatch(tail) is not None


def _candidates(text: str) -> list[str]:
    """Strings that may hold the JSON value, most likely first; the last is the whole reply
    (cleaned)."""
    cleaned = text.translate(_SMART_QUOTES).strip()
    found = [m.group(1).strip() for m in _FENCE.finditer(cleaned)]
    found.append(cleaned)
    return found


class _NoValue(Exception):
    """No JSON container starts at a position; ``cost`` is what finding that out read;
    ``unfinished``: the text ends inside the value that starts there."""

    def __init__(self, cost: int, deep: bool = False, unfinished: bool = False) -> None:
        self.cost = cost
        self.deep = deep
        self.unfinished = unfinished


def _decode_at(decoder: json.JSONDecoder, text: str, index: int) -> tuple[Any, int]:
    """The JSON value starting at ``index`` and where it ends, reading as little as it can.

    The value is decoded from windows of the text that double in length until the value
    fits or a parse error is clearly not caused by the window's end. (Decoding the whole
    text from ``index`` would cost a pass over everything before ``index`` for each error
    message, which makes scanning a reply full of brackets quadratic.)
    """
    window, cost = _FIRST_WINDOW, 0
    while True:
        chunk = text[index : index + window]
        complete = index + window >= len(text)
        cost += len(chunk)
        try:
            value, end = decoder.raw_decode(chunk)
        except RecursionError:
            raise _NoValue(cost, deep=True) from None
        except json.JSONDecodeError as exc:
            if complete:
                raise _NoValue(cost, unfinished=_ends_inside(exc, chunk)) from None
            cut = exc.msg.startswith("Unterminated string") or exc.pos >= len(chunk) - _CUT_MARGIN
            if not cut:
                raise _NoValue(cost) from None
            window *= 2
            continue
        except ValueError:  # an integer past Python's digit limit
            raise _NoValue(cost) from None
        return value, index + end


def _first_wanted(value: Any, want: type | tuple[type, ...]) -> Any:
    """The first container of type ``want`` in ``value`` (itself included), in text order."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, want):
            return item
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict | list):
            stack.extend(c for c in reversed(list(children)) if isinstance(c, dict | list))
    raise LookupError


def _scan_json(text: str, want: type | tuple[type, ...]) -> Any:
    """The first JSON value (object or array) that appears anywhere in ``text``
    (:func:`_scan_values`); ValueError when there is none."""
    for value in _scan_values(text, want):
        return value
    raise ValueError("no JSON value found")


def _scan_values(text: str, want: type | tuple[type, ...]) -> Iterator[Any]:
    """The JSON values (objects or arrays) that appear in ``text``, in order: of each
    complete top-level value, its first container of type ``want``.

    Linear in the length of ``text``: a value found is searched, not decoded again from
    each bracket inside it, and failed attempts stop once they have read a few times the
    text's length (a reply that hostile holds no usable JSON). Raises :class:`UnfinishedJSON`
    when the text ends inside a value before any wanted one was found: everything after its
    opening bracket belongs to the fragment, so no bracket inside it is tried.
    """
    decoder = _DECODER
    budget = _BUDGET_FACTOR * len(text) + _BUDGET_FLOOR
    too_deep = 0
    opener = _OPENERS.search(text)
    while opener is not None:
        index = opener.start()
        try:
            value, end = _decode_at(decoder, text, index)
        except _NoValue as failure:
            if failure.unfinished:
                raise UnfinishedJSON(_UNFINISHED, reply=text) from None
            budget -= failure.cost
            if budget < 0:
                break
            if failure.deep:
                # Nested deeper than the decoder can follow (a degenerate reply such as
                # "[[[[..."). Skip the whole run of brackets, and give up after a few runs.
                too_deep += 1
                if too_deep >= _MAX_DEEP_RUNS:
                    break
                while index < len(text) and text[index] in "{[ \t\r\n":
                    index += 1
            else:
                index += 1
            opener = _OPENERS.search(text, index)
            continue
        opener = _OPENERS.search(text, end)
        try:
            found = _first_wanted(value, want)
        except LookupError:
            continue
        yield found


_UNFINISHED = (
    "the reply ends inside a JSON value that is never closed (it was cut off): "
    "nothing in it can be used"
)


#: How many JSON values of a reply are compared with the one taken (a reply holding more is
#: degenerate; the first ones are what a reader would take for the answer).
_MAX_VALUES_COMPARED = 16


def _unambiguous(value: Any, cleaned: str, want: type | tuple[type, ...]) -> Any:
    """``value`` unless the reply (``cleaned`` as :func:`_candidates` cleans it) holds
    another, different JSON value of type ``want`` (the same value repeated, or a value
    inside the one taken, is no ambiguity)."""
    try:
        for count, other in enumerate(_scan_values(cleaned, want)):
            if count >= _MAX_VALUES_COMPARED:
                break
            if other != value:
                raise AmbiguousReply(
                    f"the reply holds two different JSON answers ({_short(value)} and "
                    f"{_short(other)}): give exactly one"
                )
    except UnfinishedJSON:
        pass  # a fragment after the answer: not a second answer
    return value


def extract_json(text: str, want: type | None = None) -> Any:
    """Extract a JSON value from a reply (fenced, bare, or surrounded by prose).

    ``want`` (dict or list) restricts what is accepted; by default an object or an array.
    Raises :class:`ParseError`; :class:`UnfinishedJSON` when the reply ends inside a JSON
    value and holds no complete one before it.
    """
    accepted: type | tuple[type, ...] = want if want is not None else (dict, list)
    if not text or not text.strip():
        raise ParseError("the reply is empty", reply=text)
    try:
        return _extract(text, accepted, want)
    except AmbiguousReply as exc:
        exc.reply = exc.reply if exc.reply is not None else text
        raise


def _extract(text: str, accepted: type | tuple[type, ...], want: type | None) -> Any:
    unfinished = False
    candidates = _candidates(text)
    cleaned = candidates[-1]  # the whole reply
    for candidate in candidates:
        try:
            value = _DECODER.decode(candidate)
            if isinstance(value, accepted):
                # the whole reply is this one value: there is no other
                return value if candidate is cleaned else _unambiguous(value, cleaned, accepted)
        except (ValueError, RecursionError):
            pass
        try:
            return _unambiguous(_scan_json(candidate, accepted), cleaned, accepted)
        except UnfinishedJSON:
            unfinished = True
        except ValueError:
            continue
    if unfinished:
        raise UnfinishedJSON(_UNFINISHED, reply=text)
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
    rf"[\"']?score[\"']?\s*[:=]\s*(?P<quote>[\"']?)"
    rf"(?P<score>{_NUMBER}(?:\s*(?:/|out of)\s*{_NUMBER})?)"
    r"(?!\d|\.\d|[eE][-+]?\d)"  # not the prefix of a longer number such as 1e999
    r"(?P=quote)",  # a quoted score must be closed: '"score": "1' is a cut "10", "100", ...
    re.IGNORECASE,
)
_LOOSE_REASONING = re.compile(
    r"[\"']?reasoning[\"']?\s*[:=]\s*[\"']?(.+)", re.IGNORECASE | re.DOTALL
)


def parse_judgement(text: str, low: float = 0, high: float = 10) -> tuple[float, str]:
    """Parse a ``{"score": ..., "reasoning": ...}`` reply into (score, reasoning).

    Falls back to ``score: 8`` / ``8/10`` written in prose when there is no JSON object, but
    never in a reply that opens an object it does not close (``{"score": "1`` is a cut reply,
    not the score 1): that is an :class:`UnfinishedJSON` error.
    """
    try:
        data = extract_json(text, dict)
    except (UnfinishedJSON, AmbiguousReply):
        raise
    except ParseError:
        data = None
    if data is not None:
        lowered: dict[str, Any] = {}
        for key, value in data.items():
            name = str(key).strip().lower()
            if name in lowered and lowered[name] != value:
                raise AmbiguousReply(
                    f"the reply gives {name!r} twice with different values "
                    f"({_short(lowered[name])} and {_short(value)}): give it once",
                    reply=text,
                )
            lowered[name] = value
        if "score" not in lowered:
            raise ParseError('the JSON object has no "score" key', reply=text)
        score = parse_score(lowered["score"], low, high)
        reasoning = lowered.get("reasoning", lowered.get("reason", ""))
        return score, str(reasoning if reasoning is not None else "").strip()
    if text.count("{") > text.count("}"):
        raise UnfinishedJSON(_UNFINISHED, reply=text)
    loose = _LOOSE_SCORE.search(text)
    if loose is not None:
        _one_loose_score(text, low, high)
    match = loose or re.search(rf"\b({_NUMBER}\s*(?:/|out of)\s*{high:g})\b", text)
    if match is None:
        raise ParseError(
            'no score found; expected JSON like {"score": 7, "reasoning": "..."}', text
        )
    score = parse_score(loose.group("score") if loose else match.group(1), low, high)
    reason_match = _LOOSE_REASONING.search(text)
    reasoning = reason_match.group(1).strip().strip("\"'}") if reason_match else text.strip()
    return score, reasoning


def _one_loose_score(text: str, low: float, high: float) -> None:
    """AmbiguousReply when the prose of ``text`` gives two different scores (``score: 3``
    ... ``score: 9``)."""
    scores: dict[float, str] = {}
    for match in _LOOSE_SCORE.finditer(text):
        try:
            scores.setdefault(parse_score(match.group("score"), low, high), match.group())
        except ParseError:
            scores.setdefault(math.nan, match.group())
        if len(scores) > 1:
            first, second = list(scores.values())[:2]
            raise AmbiguousReply(
                f"the reply gives two different scores ({first!r} and {second!r}): give one",
                reply=text,
            )


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
