"""Strict validation of factor-rubric replies: exact keys, integer Likert scores, short reasons.

The reply must be one JSON object of the form::

    {"image_id": "<id>", "<result_key>": {"<factor>": {"score": 5, "justification": "..."}}}

Form is treated leniently (a fenced block, or prose around the object, is accepted), content
strictly: every problem found is listed in one :class:`ParseError`, so the re-ask can name them
all at once. ``image_id`` is the one exception: it only echoes the sample, so a wrong or absent
``image_id`` never rejects an otherwise valid answer; the value the judge wrote is returned
as is, for the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cigeval.errors import ParseError
from cigeval.parsing import extract_json
from cigeval.rubrics._shared import word_count


@dataclass(frozen=True)
class FactorReplySpec:
    """What a valid reply looks like for one request.

    ``image_id`` is the id the prompt asks the judge to echo; ``justification_words`` is the
    inclusive (min, max) word count, or None for no limit.
    """

    image_id: str
    result_key: str
    factors: tuple[str, ...]
    scale: tuple[int, int] = (1, 7)
    justification_words: tuple[int, int] | None = (15, 30)


def _as_integer(value: Any) -> int | None:
    """The integer a JSON value denotes (7, 7.0, "7"), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    return None


def _key_problems(found: Sequence[str], expected: Sequence[str], where: str) -> list[str]:
    missing = [k for k in expected if k not in found]
    extra = [k for k in found if k not in expected]
    problems = []
    if missing:
        problems.append(f"{where} is missing the key(s) {', '.join(map(repr, missing))}")
    if extra:
        problems.append(f"{where} has unexpected key(s) {', '.join(map(repr, extra))}")
    return problems


def _factor_problems(name: str, entry: Any, spec: FactorReplySpec) -> list[str]:
    where = f"{spec.result_key}.{name}"
    if not isinstance(entry, dict):
        return [f'{where} must be an object {{"score": ..., "justification": ...}}']
    problems = _key_problems(list(entry), ["score", "justification"], where)
    low, high = spec.scale
    if "score" in entry:
        number = _as_integer(entry["score"])
        if number is None:
            problems.append(
                f"{where}.score must be an integer from {low} to {high}, got {entry['score']!r}"
            )
        elif not low <= number <= high:
            problems.append(f"{where}.score is {number}, outside the allowed range {low}-{high}")
    if "justification" in entry:
        text = entry["justification"]
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}.justification must be a non-empty string")
        elif spec.justification_words is not None:
            words = word_count(text)
            shortest, longest = spec.justification_words
            if not shortest <= words <= longest:
                problems.append(
                    f"{where}.justification has {words} words; it must have {shortest} to {longest}"
                )
    return problems


def parse_factor_reply(text: str, spec: FactorReplySpec) -> dict[str, Any]:
    """Validate a reply and return it as a dict, with scores as ints and texts stripped.

    Raises :class:`ParseError` listing every problem: a missing or extra factor, a score that is
    not an integer or is out of range, a justification of the wrong length, a missing result
    key or an unexpected top-level key. The returned ``image_id`` is what the judge wrote
    (stripped when it is a string; None when absent): it is never a reason to reject.
    """
    data = extract_json(text, dict)
    problems = _key_problems([k for k in data if k != "image_id"], [spec.result_key], "the reply")
    results = data.get(spec.result_key)
    if spec.result_key in data and not isinstance(results, dict):
        problems.append(f"{spec.result_key} must be an object keyed by factor name")
    elif isinstance(results, dict):
        problems += _key_problems(list(results), spec.factors, spec.result_key)
        for name in spec.factors:
            if name in results:
                problems += _factor_problems(name, results[name], spec)
    if problems:
        raise ParseError("; ".join(problems), reply=text)
    assert isinstance(results, dict)
    image_id = data.get("image_id")
    return {
        "image_id": image_id.strip() if isinstance(image_id, str) else image_id,
        spec.result_key: {
            name: {
                "score": _as_integer(results[name]["score"]),
                "justification": results[name]["justification"].strip(),
            }
            for name in spec.factors
        },
    }
