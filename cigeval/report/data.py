"""What a report is made of: one run per results file (or list of Scores), matched by sample id.

A *run* is one judge's records. Unreadable lines are skipped with the policy of
:func:`cigeval.results.read_records` and listed as problems of the run; nothing here raises on
bad records. Records are plain dicts (``Score.to_record``), so reports work from files and
from Scores in memory alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval.results.jsonl import SkippedLine, read_records

#: The generator label of a record without a ``model`` field.
NO_GENERATOR = "(no model)"


@dataclass
class Run:
    """One judge's results: its label, where they came from, its records and what was skipped.

    ``images`` holds images known in memory (sha256 -> PIL image), for runs made from Scores.
    """

    label: str
    source: str
    records: list[dict[str, Any]]
    skipped: list[SkippedLine] = field(default_factory=list)
    base_dir: Path | None = None
    images: dict[str, Any] = field(default_factory=dict)

    def by_id(self) -> dict[str, dict[str, Any]]:
        """The records by sample id (the last record wins when an id repeats)."""
        return {str(r["id"]): r for r in self.records}

    def judge(self) -> str | None:
        """The judge named by most records (None when no record names one)."""
        names = Counter(str(r["judge"]) for r in self.records if r.get("judge"))
        return names.most_common(1)[0][0] if names else None


def generator_of(record: Mapping[str, Any]) -> str:
    """The generator (the ``model`` pass-through field) of a record, or :data:`NO_GENERATOR`."""
    model = record.get("model")
    return NO_GENERATOR if model is None or model == "" else str(model)


def score_of(record: Mapping[str, Any]) -> float | None:
    """The record's score when it ended ``ok`` with a finite number, else None."""
    value = record.get("score")
    if record.get("status") != "ok" or isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value == value and abs(value) != float("inf"):
        return float(value)
    return None


def conditions_of(record: Mapping[str, Any]) -> dict[str, str]:
    """The sample's text conditions (prompt, instruction, subject, ...) the record carries."""
    conditions = record.get("conditions")
    if not isinstance(conditions, dict):
        return {}
    return {str(k): str(v) for k, v in conditions.items() if v not in (None, "")}


def image_order(task: str, roles: Iterable[str]) -> list[str]:
    """Image roles in their natural order: the task's ``image_roles`` order (references and
    sources first), other roles after them, the output last."""
    declared: list[str] = []
    try:
        from cigeval.tasks import get_task

        spec = get_task(task)
        declared = [*spec.image_roles, *spec.optional_image_roles]
    except Exception:  # an unknown task (a user task not loaded): fall back to the names
        declared = []

    def position(role: str) -> tuple[int, int, str]:
        if role == "output" or role.startswith("output_"):
            return (2, 0, role)
        for index, name in enumerate(declared):
            if role == name or (name == "subjects" and role.startswith("subject_")):
                return (0, index, role)
        return (1, 0, role)

    return sorted(roles, key=position)


def unique_labels(labels: list[str]) -> list[str]:
    """The labels, with ``#2``, ``#3`` ... added where one repeats."""
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        seen[label] += 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


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


def hashed_images(score: Any) -> dict[str, Any]:
    """The input and tool images a Score holds in memory, by the sha256 its record names."""
    images: dict[str, Any] = {}
    for role, image in score.images.items():
        sha = score.input_images.get(role)
        if sha is not None:
            images[sha] = image
    for sub in score.sub_scores:
        for role, image in sub.tool_images.items():
            sha = sub.tool_image_ids.get(role)
            if sha is not None:
                images[sha] = image
    return images


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
            images.update(hashed_images(item))
        elif isinstance(item, Mapping) and "id" in item:
            records.append(dict(item))
        else:
            raise TypeError(f"expected a Score or a results record, got {type(item).__name__}")
    run = Run(label or "scores", "in memory", records, images=images)
    if label is None:
        run.label = run.judge() or "scores"
    return run


def sample_ids(runs: Iterable[Run]) -> list[str]:
    """Every sample id of the runs, in the order first seen (first run first)."""
    seen: dict[str, None] = {}
    for run in runs:
        for record in run.records:
            seen.setdefault(str(record["id"]), None)
    return list(seen)


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
