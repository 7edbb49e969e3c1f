"""LMM Score results: parsing the per-image sub-scores, the weighted S_all, ranks and ties."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cigeval.errors import ParseError
from cigeval.parsing import extract_json, parse_score

#: Sub-score keys in the judge's answer and their weights in S_all (EditEval's LMM Score).
WEIGHTS: dict[str, float] = {"S_acc": 0.4, "S_pre": 0.3, "S_qua": 0.2, "S_real": 0.1}
#: Keys tolerated beside the sub-scores: a short reason, and an S_all that is ignored
#: because cigeval computes S_all itself.
_TOLERATED = ("reason", "S_all")


@dataclass(frozen=True)
class ImageScores:
    """The four 1-10 sub-scores the judge gave one edited image, and its short reason."""

    key: str
    sub_scores: dict[str, int]
    reason: str

    @property
    def s_all(self) -> float:
        """0.4 S_acc + 0.3 S_pre + 0.2 S_qua + 0.1 S_real, rounded to 4 decimals."""
        return round(sum(WEIGHTS[k] * v for k, v in self.sub_scores.items()), 4)


def image_keys(count: int) -> list[str]:
    """``image_1`` ... ``image_<count>``."""
    return [f"image_{i}" for i in range(1, count + 1)]


def _unwrap(data: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """Accept ``{"scores": {"image_1": ...}}`` as well as the flat form."""
    if len(data) == 1 and keys[0] not in data:
        inner = next(iter(data.values()))
        if isinstance(inner, dict) and keys[0] in inner:
            return inner
    return data


def parse_lmm_scores(text: str, count: int) -> list[ImageScores]:
    """Validate the scoring reply for ``count`` images; raise ParseError listing all problems.

    Every ``image_k`` key must be present and no other; each holds S_acc, S_pre, S_qua and
    S_real as integers from 1 to 10 (an ``S_all`` from the model is ignored).
    """
    keys = image_keys(count)
    data = _unwrap(extract_json(text, dict), keys)
    problems: list[str] = []
    missing = [k for k in keys if k not in data]
    extra = [k for k in data if k not in keys]
    if missing:
        problems.append(f"missing image key(s) {', '.join(missing)}")
    if extra:
        problems.append(
            f"unexpected key(s) {', '.join(map(repr, extra))}; use image_1 to image_{count} only"
        )
    parsed: list[ImageScores] = []
    for key in keys:
        entry = data.get(key)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            problems.append(f"{key} must be an object with S_acc, S_pre, S_qua, S_real")
            continue
        absent = [f for f in WEIGHTS if f not in entry]
        unknown = [f for f in entry if f not in WEIGHTS and f not in _TOLERATED]
        if absent:
            problems.append(f"{key} is missing {', '.join(absent)}")
        if unknown:
            problems.append(f"{key} has unexpected key(s) {', '.join(map(repr, unknown))}")
        values: dict[str, int] = {}
        for factor in WEIGHTS:
            if factor not in entry:
                continue
            try:
                values[factor] = int(parse_score(entry[factor], 1, 10, integer=True))
            except ParseError as exc:
                problems.append(f"{key}.{factor}: {exc}")
        if len(values) == len(WEIGHTS):
            parsed.append(ImageScores(key, values, str(entry.get("reason") or "").strip()))
    if problems:
        raise ParseError("; ".join(problems), reply=text)
    return parsed


def competition_ranks(values: list[float]) -> list[int]:
    """Rank 1 = highest; equal values share the best rank and the next rank is skipped
    ("1224" standard competition ranking)."""
    return [1 + sum(1 for other in values if other > value) for value in values]


def tie_warnings(results: list[ImageScores]) -> list[str]:
    """One warning per sub-score value (and S_all value) shared by two or more images."""
    warnings: list[str] = []
    if len(results) < 2:
        return warnings
    columns: dict[str, list[float]] = {
        f: [float(r.sub_scores[f]) for r in results] for f in WEIGHTS
    }
    columns["S_all"] = [r.s_all for r in results]
    for column, values in columns.items():
        groups: dict[float, list[str]] = {}
        for result, value in zip(results, values, strict=True):
            groups.setdefault(value, []).append(result.key)
        for value, members in sorted(groups.items(), reverse=True):
            if len(members) > 1:
                warnings.append(f"tie on {column} = {value:g}: {', '.join(members)}")
    return warnings
