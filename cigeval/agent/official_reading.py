"""How the official CIGEval code reads a reply, quirks included (``reply_parsing="official"``).

The official client (HITsz-TMG/Agentic-CIGEval: ``util.py``, ``evaluate.py``; its analysis
script ``spear.py``) reads a reply in steps, each of which this module does the same way:

1. the JSON (``GPTResponse2JSON``): the text of the first json-fenced block, else the whole
   reply; if that still holds an opening fence, every fence and every "json" is deleted; then
   ``json.loads``. When that fails the reply goes to a separate text-only repair request
   (:func:`repair_input` is what it shows), whose reply is read with ``json.loads`` of its
   first json-fenced block (:func:`loads_repaired`). Python's ``json.loads`` keeps the last of
   two equal keys and reads ``NaN`` and ``Infinity``;
2. the score of a judge's reply (``get_number``): the JSON must be an object with a "score"
   key; a string score keeps only its digits ("7.5" is 75, "8/10" is 810, "-2" is 2; no digit
   at all fails); any other value is taken as it is;
3. the reasoning: the object must have a "reasoning" key (read after every sub-question of
   the sample was asked, so a missing one fails the whole attempt);
4. the analysis (``spear.py``): ``int()`` of each score (a bare 7.5 is 7, ``true`` is 1; null,
   a list, NaN fail), the minimum over the sub-questions, /10, clipped into 0..1. Clipping each
   sub-score into 0..10 first gives the same sample score, so the sub-scores here are clipped.

A failure in steps 1-3 makes the official code try the sample again (three attempts in all,
then it drops the sample); one in step 4 stops its analysis. Those failures are
:class:`OfficialReadError` with the stage in :attr:`~OfficialReadError.stage`.

Plans (``check`` in util.py): each entry's keys are mapped to the nearest known key by edit
distance, and a known key the entry lacks *as written* is set to "None" (so a misspelt
"Tool" gives the tool "None"); entries are then read by position (:func:`plan_entry`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cigeval.parsing import ParseError, parse_judgement

_FENCED_JSON = re.compile(r"```json(.*?)```", re.DOTALL)
_NOT_DIGIT = re.compile(r"[^0-9]")
#: The keys the official code maps a plan entry's keys onto (its ``check``).
PLAN_KEYS = ("task_id", "reasoning", "used", "tool")
#: Where a reading failed: ``attempt`` (the official code tries the sample again) or
#: ``analysis`` (its analysis script cannot use the score).
Stage = str


class OfficialReadError(Exception):
    """The official code could not read a reply; ``stage`` says what it does then."""

    def __init__(self, message: str, stage: Stage = "attempt") -> None:
        super().__init__(message)
        self.stage = stage


def clean_text(text: str) -> str:
    """The text of the first json-fenced block (its newlines included), else ``text``."""
    match = _FENCED_JSON.search(text)
    return match.group(1) if match else text


def _json_text(reply: str) -> str:
    """The text ``GPTResponse2JSON`` hands to ``json.loads`` before any repair."""
    text = clean_text(reply)
    if "```json" in text:  # an opening fence left: fences and every "json" go
        text = text.replace("```", "").replace("json", "").strip()
    return text


def loads(reply: str) -> Any:
    """The JSON of a reply as ``GPTResponse2JSON`` reads it before any repair; ValueError
    (or RecursionError) when it cannot, which sends the reply to the repair request."""
    return json.loads(_json_text(reply))


def repair_input(reply: str) -> str:
    """What the repair request shows of an unreadable reply (the first fenced block's text,
    else the whole reply)."""
    return clean_text(reply)


def loads_repaired(reply: str) -> Any:
    """The JSON of the repair request's reply (ValueError or RecursionError when none)."""
    return json.loads(clean_text(reply))


def digits_score(data: Any) -> Any:
    """The score of a judge's JSON as ``get_number`` makes it: a string's digits as an int,
    any other value as it is. OfficialReadError (the sample is tried again) when the JSON is
    no object, has no "score" key, or a string score has no digit."""
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"the value {_short(data)}"
        raise OfficialReadError(f"the reply's JSON is {kind}, not an object with a score")
    if "score" not in data:
        raise OfficialReadError('the reply\'s JSON has no "score" key')
    raw = data["score"]
    if not isinstance(raw, str):
        return raw
    try:
        return int(_NOT_DIGIT.sub("", raw))
    except ValueError:
        raise OfficialReadError(f"the score {_short(raw)} has no digits to read") from None


def analysis_score(value: Any) -> int:
    """A sub-score as the official analysis counts it: ``int()`` of the score, clipped into
    0..10. OfficialReadError (stage ``analysis``) where ``int()`` fails."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise OfficialReadError(
            f"the score {_short(value)} cannot be counted (int() fails on it)", "analysis"
        ) from None
    return min(max(number, 0), 10)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class OfficialJudgement:
    """A judge's reply as the official evaluate pass keeps it: its JSON object (``data``),
    the score as the reply gave it (``raw``) and as ``get_number`` made it (``number``), and
    the quirks on the way (for the note). :meth:`score` is the analysis' count of it."""

    data: dict[str, Any]
    raw: Any
    number: Any
    quirks: list[str] = field(default_factory=list)

    @property
    def has_reasoning(self) -> bool:
        """Whether the object has the "reasoning" key the official code reads last."""
        return "reasoning" in self.data

    @property
    def reasoning(self) -> str:
        """The reasoning as text (empty when missing or null)."""
        value = self.data.get("reasoning")
        return "" if value is None else value if isinstance(value, str) else _short(value)

    def score(self) -> int:
        """The sub-score the official analysis counts (0..10; OfficialReadError, stage
        ``analysis``, where it cannot)."""
        return analysis_score(self.number)


def read_judgement(data: Any, reply: str, *, repaired: bool = False) -> OfficialJudgement:
    """A judge's JSON ``data`` (parsed from ``reply``, or from the repair request's reply
    when ``repaired``) as the official evaluate pass reads it: OfficialReadError (the sample
    is tried again) where it fails. The reasoning is checked once every sub-question was
    asked (:attr:`OfficialJudgement.has_reasoning`), the count at the end (``score()``)."""
    number = digits_score(data)
    quirks = []
    if repaired:
        quirks.append("read from the repair request's reply")
    else:
        fenced = len(_FENCED_JSON.findall(reply))
        if fenced > 1:
            quirks.append(f"the first of {fenced} json-fenced answers")
        keys = _score_keys(reply)
        if keys > 1:
            quirks.append(f'the last of {keys} "score" keys')
    return OfficialJudgement(data, data["score"], number, quirks)


def _score_keys(reply: str) -> int:
    """How many "score" keys the object the official code read holds (json.loads keeps the
    last one)."""
    counted = [0]

    def count(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        counted[0] = max(counted[0], sum(1 for key, _ in pairs if key == "score"))
        return dict(pairs)

    try:
        json.loads(_json_text(reply), object_pairs_hook=count)
    except (ValueError, RecursionError):
        return 0
    return counted[0]


def quirk_note(reading: OfficialJudgement, score: int, reply: str) -> str | None:
    """The note of a sub-score whose value the official reading changed: where cigeval's
    strict reading of the same reply gives another score than ``score``, or none at all.
    None when they agree."""
    try:
        strict: float | None = parse_judgement(reply)[0]
    except ParseError:
        strict = None
    if strict is not None and strict == score:
        return None
    said = _short(reading.raw)
    note = f"read as {score} ({score / 10:.1f}) by the official parser; the reply said {said}"
    return "; ".join([note, *reading.quirks])


def levenshtein(a: str, b: str) -> int:
    """The edit distance of two strings (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, start=1):
        current = [i]
        for j, right in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (left != right))
            )
        previous = current
    return previous[-1]


def nearest_key(key: str, known: Sequence[str]) -> str:
    """The known key most similar to ``key`` (1 - edit distance / the longer length, case
    ignored); the first of the best, and the first known key when none is similar at all."""
    best, chosen = 0.0, 0
    for index, name in enumerate(known):
        similarity = 1 - levenshtein(key.lower(), name.lower()) / max(len(key), len(name))
        if similarity > best:
            best, chosen = similarity, index
    return known[chosen]


def check_plan(result: Any) -> Any:
    """The plan as the official ``check`` rewrites it: for a list, each entry's keys mapped
    to their nearest :data:`PLAN_KEYS` and every one of those the entry lacks as written set
    to "None"; for an object, its keys mapped. OfficialReadError (the plan is asked again)
    for anything else, or a list entry that is no object."""
    if isinstance(result, list):
        entries = []
        for item in result:
            if not isinstance(item, dict):
                raise OfficialReadError(f"a plan entry is {_short(item)}, not an object")
            entry = {nearest_key(key, PLAN_KEYS): value for key, value in item.items()}
            entry.update({key: "None" for key in PLAN_KEYS if key not in item})
            entries.append(entry)
        return entries
    if isinstance(result, dict):
        return {nearest_key(key, PLAN_KEYS): value for key, value in result.items()}
    raise OfficialReadError(f"the plan is {_short(result)}, not a list of entries")


def plan_entry(plan: Any, position: int) -> dict[str, Any]:
    """The plan's entry at ``position`` (0 for task 1), as the evaluate pass looks it up;
    OfficialReadError (the sample is tried again) when the plan has none there."""
    if not isinstance(plan, list):
        raise OfficialReadError("the plan is an object, not a list of entries: it has no entry 1")
    if position >= len(plan):
        raise OfficialReadError(
            f"the plan has {len(plan)} entr{'y' if len(plan) == 1 else 'ies'}, none for task "
            f"{position + 1}"
        )
    entry: dict[str, Any] = plan[position]
    return entry
