"""Results in memory: one :class:`Run` per results file (or list of Scores), and whether a
record's score counts (:func:`score_of`). Reports, comparisons, trackers and meta-evaluation
read runs through here.

A *run* is one judge's records. Unreadable lines are skipped with the policy of
:func:`cigeval.results.read_records` and listed as problems of the run; nothing here raises on
bad records. Records are plain dicts (``Score.to_record``), so runs come from files and from
Scores in memory alike.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval.results.fingerprint import differing_settings, fingerprint_of, settings_of_record
from cigeval.results.jsonl import SkippedLine, last_record_per_id, read_records
from cigeval.results.record import value_at
from cigeval.rubrics.base import out_of_range
from cigeval.rubrics.registry import record_score_range


@dataclass
class Run:
    """One judge's results: its label, where they came from, its records and what was skipped.

    ``records`` holds one record per sample id: where an id repeats, the last record wins
    (:func:`cigeval.results.last_record_per_id`) and the id is listed in ``duplicates``, so
    every count and mean of a report counts samples, never lines. ``images`` holds images
    known in memory (sha256 -> PIL image), for runs made from Scores.
    """

    label: str
    source: str
    records: list[dict[str, Any]]
    skipped: list[SkippedLine] = field(default_factory=list)
    base_dir: Path | None = None
    images: dict[str, Any] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.records = last_record_per_id(self.records, self.duplicates)

    def by_id(self) -> dict[str, dict[str, Any]]:
        """The records by sample id."""
        return {str(r["id"]): r for r in self.records}

    def judge(self) -> str | None:
        """The judge named by most records (None when no record names one)."""
        names = Counter(str(r["judge"]) for r in self.records if r.get("judge"))
        return names.most_common(1)[0][0] if names else None


def score_of(record: Mapping[str, Any]) -> float | None:
    """The record's score when it ended ``ok`` with a finite number within its rubric's
    range, else None (such a record counts as an error in every mean and count)."""
    value = record.get("score")
    if record.get("status") != "ok" or out_of_range(value, record_score_range(record)):
        return None
    return float(value) if isinstance(value, int | float) else None


def record_problem(record: Mapping[str, Any]) -> str | None:
    """Why an ``ok`` record's score is not used (not a finite number, or outside its
    rubric's range), or None when it is used or the record is not ``ok``."""
    if record.get("status") != "ok" or score_of(record) is not None:
        return None
    value = record.get("score")
    sample = f"sample {str(record.get('id'))!r}"
    if out_of_range(value, (float("-inf"), float("inf"))):
        return f"{sample} says ok but its score {value!r} is not a finite number"
    low, high = record_score_range(record)
    return (
        f"{sample} says ok but its score {value!r} is outside the range [{low:g}, {high:g}] "
        f"of rubric {record.get('rubric') or 'cigeval'!r}"
    )


def unique_labels(labels: list[str]) -> list[str]:
    """The labels, with ``#2``, ``#3`` ... added where one repeats."""
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        seen[label] += 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


#: The longest value a run's label shows of a setting, and how many settings it names.
_LABEL_VALUE_CHARS = 32
_LABEL_SETTINGS = 2
#: The settings a label names first when several differ: those the others follow from (the
#: method sets many), then those a person chooses most often.
_LABEL_FIRST = (
    "config.method",
    "rubric",
    "judges",
    "config.tools",
    "config.aggregate",
    "config.max_rounds",
    "config.ensemble",
    "cigeval_version",
)


def _label_rank(name: str) -> tuple[int, str]:
    for rank, first in enumerate(_LABEL_FIRST):
        if name == first or name.startswith(first + "."):
            return (rank, name)
    return (len(_LABEL_FIRST), name)


def distinct_labels(runs: list[Run]) -> list[str]:
    """A label per run, told apart where runs share one (one judge run twice): by the
    settings that differ between them (``gpt-4o (method=extended)``), else by their results
    file's name, else by ``#2``, ``#3`` ..."""
    groups: dict[str, list[int]] = {}
    for index, run in enumerate(runs):
        groups.setdefault(run.label, []).append(index)
    labels = [run.label for run in runs]
    for label, members in groups.items():
        if len(members) < 2:
            continue
        settings = [_settings(runs[i]) for i in members]
        names: dict[str, None] = {}
        for other in settings[1:]:
            names.update(dict.fromkeys(differing_settings(settings[0], other)))
        ordered = sorted(names, key=_label_rank)
        for i, setting in zip(members, settings, strict=True):
            parts = [f"{_short(n)}={_setting_value(setting, n)}" for n in ordered[:_LABEL_SETTINGS]]
            if len(ordered) > _LABEL_SETTINGS:
                parts.append("…")
            labels[i] = f"{label} ({', '.join(parts)})" if parts else label
        files = [Path(runs[i].source).name for i in members]
        repeated = Counter(labels[i] for i in members)
        for i, name in zip(members, files, strict=True):
            if repeated[labels[i]] > 1 and files.count(name) == 1:
                labels[i] = f"{labels[i]} ({name})"
    return unique_labels(labels)


def _settings(run: Run) -> dict[str, Any]:
    return settings_of_record(run.records[0]) if run.records else {}


def _short(name: str) -> str:
    """A setting's dotted name as a label shows it (``config.`` left out)."""
    return name.removeprefix("config.")


def _setting_value(settings: Mapping[str, Any], name: str) -> str:
    value = value_at(settings, name)
    if name == "judges" and isinstance(value, list):  # where each judge was asked
        value = "+".join(
            str(j.get("endpoint") or j.get("judge")) for j in value if isinstance(j, Mapping)
        )
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    if len(text) > _LABEL_VALUE_CHARS:
        text = text[: _LABEL_VALUE_CHARS - 1] + "…"
    return text


def load_run(path: str | Path) -> Run:
    """The run in a results JSONL file, labelled by its judge (else the file name).

    A missing file is an empty run with one problem line, so one bad path never loses the
    others.
    """
    path = Path(path)
    skipped: list[SkippedLine] = []
    if not path.is_file():
        return Run(path.stem, str(path), [], [SkippedLine(0, "results file not found")])
    records = list(read_records(path, skipped))
    run = Run(path.stem, str(path), records, skipped, base_dir=path.resolve().parent)
    run.label = run.judge() or path.stem
    return run


def run_from_scores(scores: Iterable[Any], label: str | None = None) -> Run:
    """A run made from Scores or result records (dicts) in memory.

    The input images and tool images Scores hold in memory are kept, so a notebook shows them
    even when the records name no image files.
    """
    from cigeval.score import Score

    records: list[dict[str, Any]] = []
    images: dict[str, Any] = {}
    for item in scores:
        if isinstance(item, Score):
            records.append(item.to_record(include_trace=False))
            images.update(item.images_by_hash())
        elif isinstance(item, Mapping) and "id" in item:
            records.append(dict(item))
        else:
            raise TypeError(f"expected a Score or a results record, got {type(item).__name__}")
    run = Run(label or "scores", "in memory", records, images=images)
    if label is None:
        run.label = run.judge() or "scores"
    return run


def sample_ids(runs: Iterable[Run]) -> list[str]:
    """Every sample id of the runs in the order of their input: by where the first record of
    each stands in its samples (``provenance.input_position``, within its samples file, the
    files in the order first seen); ids whose records say nothing of it (written before it
    was recorded, or Scores in memory) follow, in the order first seen (first run first)."""
    seen: dict[str, tuple[str, int] | None] = {}
    for run in runs:
        for record in run.records:
            sid = str(record["id"])
            if seen.get(sid) is None:
                seen[sid] = _input_place(record)
    files = {place[0]: None for place in seen.values() if place is not None}
    rank = {name: number for number, name in enumerate(files)}

    def order(entry: tuple[int, tuple[str, tuple[str, int] | None]]) -> tuple[int, ...]:
        first_seen, (_, place) = entry
        if place is None:
            return (1, 0, 0, first_seen)
        return (0, rank[place[0]], place[1], first_seen)

    return [sid for _, (sid, _) in sorted(enumerate(seen.items()), key=order)]


def first_in_input(records: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The record whose sample stands first in the input (:func:`sample_ids`' order): the
    lowest ``provenance.input_position``, else the first given (None for no record)."""
    first: Mapping[str, Any] | None = None
    first_place: tuple[str, int] | None = None
    for record in records:
        place = _input_place(record)
        if first is None or (
            place is not None and (first_place is None or place[1] < first_place[1])
        ):
            first, first_place = record, place
    return first


def _input_place(record: Mapping[str, Any]) -> tuple[str, int] | None:
    """(samples file, position) of a record's sample in its run's input, when recorded."""
    provenance = record.get("provenance")
    if not isinstance(provenance, Mapping):
        return None
    position = provenance.get("input_position")
    if not isinstance(position, int) or isinstance(position, bool):
        return None
    samples = provenance.get("samples_file")
    where = samples.get("path") if isinstance(samples, Mapping) else None
    return (str(where or ""), position)


def frame_records(frame: Any) -> list[dict[str, Any]]:
    """Result records rebuilt from a :func:`cigeval.to_frame` DataFrame: id, task, model,
    status, score, error, judge and the ``sub.*``/``tool.*`` columns as sub-scores (a frame
    holds no reasoning, images or conditions, so cards made from it show only these)."""
    records = []
    for row in frame.to_dict(orient="records"):
        clean = {k: (None if _missing(v) else v) for k, v in row.items()}
        subs = [
            {
                "question_id": name[4:],
                "question": name[4:],
                "score": value,
                "tool": clean.get(f"tool.{name[4:]}"),
            }
            for name, value in clean.items()
            if name.startswith("sub.")
        ]
        record = {
            k: clean.get(k) for k in ("id", "task", "model", "status", "score", "error", "judge")
        }
        record["id"] = str(record["id"])
        record["sub_scores"] = subs
        records.append(record)
    return records


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def split_by_settings(run: Run) -> tuple[list[Run], str | None]:
    """``run`` as one run per fingerprint (the settings that made its records), so no number
    pools records made with different settings; with the problem line that says so (None
    when every record shares one fingerprint)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in run.records:
        groups.setdefault(fingerprint_of(record), []).append(record)
    if len(groups) <= 1:
        return [run], None
    parts = []
    for records in groups.values():
        part = Run(
            run.label,  # told apart by the settings that differ (distinct_labels)
            run.source,
            records,
            base_dir=run.base_dir,
            images=run.images,
        )
        parts.append(part)
    parts[0].skipped = run.skipped
    parts[0].duplicates = run.duplicates
    first = settings_of_record(next(iter(groups.values()))[0])
    differ: dict[str, None] = {}
    for records in list(groups.values())[1:]:
        differ.update(dict.fromkeys(differing_settings(first, settings_of_record(records[0]))))
    counts = ", ".join(f"{fp[:8]}: {len(r)}" for fp, r in groups.items())
    problem = (
        f"{run.source}: records made with {len(groups)} different settings ({counts} "
        f"records), shown as separate runs and never pooled; they differ in: "
        f"{', '.join(differ) or 'unknown settings'}"
    )
    return parts, problem
