"""What a comparison reads: scored records, the condition each answers, and who judged it.

Records come from results files, :class:`~cigeval.results.run.Run` objects, Scores or plain
dicts. Each source keeps one record per sample id (the last one written, the rule of
:func:`cigeval.results.last_record_per_id`). A record answers a *condition*: the same
``metadata.uid`` / ``metadata.condition_id`` when the sample carries one, else the same task,
text conditions and input images (by hash, the judged outputs left out). A record that carries
none of these cannot be paired and is set aside with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval.results.fingerprint import fingerprint_of
from cigeval.results.jsonl import SkippedLine, last_record_per_id, read_records

#: The generator label of a record without a ``model`` field (the report's label).
NO_GENERATOR = "(no model)"
#: The judge view of an ensemble's combined score.
COMBINED = "combined"
#: Metadata keys that name the condition a sample answers, in the order they are tried.
CONDITION_ID_KEYS = ("uid", "condition_id")


@dataclass(frozen=True)
class ScoredRecord:
    """One ok record reduced to what a comparison needs."""

    source: str
    sample_id: str
    generator: str
    task: str
    condition: str
    fingerprint: str
    #: The score under each judge view: the record's own score under its judge name (or
    #: ``combined`` for an ensemble), and each ensemble member's score under its label.
    scores: dict[str, float]
    record: Mapping[str, Any] = field(repr=False, compare=False)


@dataclass
class SetAside:
    """Records left out of every pair, counted by source, generator and reason."""

    source: str
    generator: str
    reason: str
    count: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "source": self.source,
            "generator": self.generator,
            "reason": self.reason,
            "records": self.count,
        }


@dataclass
class Collected:
    """Every scored record, what was set aside, and the unreadable lines of each file."""

    records: list[ScoredRecord] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)
    skipped_lines: dict[str, list[SkippedLine]] = field(default_factory=dict)
    repeated_ids: dict[str, int] = field(default_factory=dict)

    def put_aside(self, source: str, generator: str, reason: str) -> None:
        """Count one record left out for ``reason``."""
        for entry in self.set_aside:
            if (entry.source, entry.generator, entry.reason) == (source, generator, reason):
                entry.count += 1
                return
        self.set_aside.append(SetAside(source, generator, reason, 1))


def generator_of(record: Mapping[str, Any]) -> str:
    """The generator (the record's ``model`` pass-through field), or :data:`NO_GENERATOR`."""
    model = record.get("model")
    return NO_GENERATOR if model is None or model == "" else str(model)


def finite_score(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and abs(number) != float("inf") else None


def _is_output_role(role: str) -> bool:
    return role in ("output", "outputs") or role.startswith(("output_", "candidate:"))


def condition_key(record: Mapping[str, Any]) -> str | None:
    """The condition a record answers, as a string key; None when the record names none.

    ``metadata.uid`` or ``metadata.condition_id`` (or a top-level ``condition_id``) when the
    sample carried one; otherwise the task, the text conditions and the hashes of the input
    images other than the judged output.
    """
    task = str(record.get("task", "?"))
    metadata = record.get("metadata")
    if isinstance(metadata, Mapping):
        for key in CONDITION_ID_KEYS:
            if metadata.get(key) not in (None, ""):
                return json.dumps(["id", task, key, str(metadata[key])])
    if record.get("condition_id") not in (None, ""):
        return json.dumps(["id", task, "condition_id", str(record["condition_id"])])
    conditions = record.get("conditions")
    texts = (
        sorted((str(k), str(v)) for k, v in conditions.items() if v not in (None, ""))
        if isinstance(conditions, Mapping)
        else []
    )
    images = record.get("input_images")
    hashes = (
        sorted((str(r), str(h)) for r, h in images.items() if not _is_output_role(str(r)))
        if isinstance(images, Mapping)
        else []
    )
    if not texts and not hashes:
        return None
    return json.dumps(["conditions", task, texts, hashes])


def is_preference_record(record: Mapping[str, Any]) -> bool:
    """True for a record of the preference rubrics (its details name the candidates)."""
    details = record.get("details")
    return isinstance(details, Mapping) and "candidates" in details


def judge_scores(record: Mapping[str, Any]) -> dict[str, float]:
    """The record's score under each judge view (see :attr:`ScoredRecord.scores`)."""
    value = finite_score(record.get("score"))
    if value is None:
        return {}
    details = record.get("details")
    judgments = details.get("judgments") if isinstance(details, Mapping) else None
    if not isinstance(judgments, list) or len(judgments) < 2:
        return {str(record.get("judge") or "judge"): value}
    scores = {COMBINED: value}
    for judgment in judgments:
        if not isinstance(judgment, Mapping) or judgment.get("status") != "ok":
            continue
        member = finite_score(judgment.get("score"))
        if member is not None:
            scores[str(judgment.get("judge"))] = member
    return scores


def _records_of(item: Any) -> tuple[str, list[dict[str, Any]], list[SkippedLine]]:
    """(source name, records, unreadable lines) of one source."""
    from cigeval.results.run import Run

    if isinstance(item, str | Path):
        path = Path(item)
        skipped: list[SkippedLine] = []
        if not path.is_file():
            return str(path), [], [SkippedLine(0, "results file not found")]
        return str(path), list(read_records(path, skipped)), skipped
    if isinstance(item, Run):
        return item.source if item.source != "in memory" else item.label, item.records, []
    raise TypeError(f"expected a results file path or a Run, got {type(item).__name__}")


def _as_record(item: Any) -> dict[str, Any]:
    from cigeval.score import Score

    if isinstance(item, Score):
        return item.to_record(include_trace=False)
    if isinstance(item, Mapping) and "id" in item:
        return dict(item)
    raise TypeError(f"expected a Score or a results record, got {type(item).__name__}")


def sources_of(items: Any) -> list[tuple[str, list[dict[str, Any]], list[SkippedLine]]]:
    """The sources in ``items``: one results file path, a list of paths or Runs (one source
    each), or a list of Scores / records (one source, "in memory")."""
    from cigeval.results.run import Run

    if isinstance(items, str | Path | Run):
        items = [items]
    items = list(items)
    if items and all(isinstance(i, str | Path | Run) for i in items):
        return [_records_of(i) for i in items]
    return [("in memory", [_as_record(i) for i in items], [])]


def collect(items: Any) -> Collected:
    """Every ok record of ``items`` (see :func:`sources_of`) with its condition and judge
    views; records in error, without a score or without a condition are counted aside."""
    collected = Collected()
    for source, records, skipped in sources_of(items):
        if skipped:
            collected.skipped_lines[source] = skipped
        repeated: list[str] = []
        for record in last_record_per_id(records, repeated):
            generator = generator_of(record)
            if record.get("status") != "ok":
                collected.put_aside(source, generator, "ended in error")
                continue
            if is_preference_record(record):
                collected.put_aside(
                    source,
                    generator,
                    "holds a preference between candidates (rubric pairwise or pointwise), "
                    "not one generator's score",
                )
                continue
            scores = judge_scores(record)
            if not scores:
                collected.put_aside(source, generator, "ok but without a finite score")
                continue
            condition = condition_key(record)
            if condition is None:
                collected.put_aside(
                    source,
                    generator,
                    "names no condition (no metadata.uid, conditions or input images; "
                    "written before cigeval recorded them)",
                )
                continue
            collected.records.append(
                ScoredRecord(
                    source=source,
                    sample_id=str(record["id"]),
                    generator=generator,
                    task=str(record.get("task", "?")),
                    condition=condition,
                    fingerprint=fingerprint_of(record),
                    scores=scores,
                    record=record,
                )
            )
        if repeated:
            collected.repeated_ids[source] = len(repeated)
    return collected


def generators_in(records: Iterable[ScoredRecord]) -> list[str]:
    """The generators of ``records``, in the order first seen."""
    return list(dict.fromkeys(r.generator for r in records))
