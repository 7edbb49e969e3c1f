"""cigeval results as evaluator frames: one row per sample of each run, values checked.

Three rules keep a number honest. Records of different run fingerprints (other settings, other
judge, other cigeval version: :func:`cigeval.results.fingerprint.fingerprint_of`) are kept
apart: each row carries its ``fingerprint`` and :func:`cigeval.meta.split_runs` turns them into
separate evaluators. Within a run one record per sample id counts, the last one written
(:func:`cigeval.results.last_record_per_id`: a rerun replaces the earlier record); the ids
dropped are listed in ``frame.attrs["duplicate_ids"]``. Every score is a finite number in the
record's range (:func:`cigeval.rubrics.registry.record_score_range`: [0, 1] unless the record
or its rubric declares another); anything else is an error
naming the file, the line and the field, or with ``lenient`` a missing value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.cells import BadCell, check_number
from cigeval.meta.frames import MissingPolicy, evaluator_frame, record_uid, task_id
from cigeval.meta.human import DIMENSIONS, KEY
from cigeval.rubrics.registry import record_score_range


class _Reader:
    """Reads the values of records, strictly or leniently, and remembers what it skipped."""

    def __init__(self, source: str, lenient: bool) -> None:
        self.source, self.lenient = source, lenient
        self.skipped: list[BadCell] = []

    def number(self, value: Any, field: str, line: int | None, low: float, high: float) -> float:
        if value is None:
            return math.nan
        if isinstance(value, bool) or not isinstance(value, int | float):
            problem = "expected a number or null"
        else:
            problem = check_number(float(value), low, high) or ""
            if not problem:
                return float(value)
        bad = BadCell(self.source, line, field, repr(value), problem)
        if not self.lenient:
            raise bad.error()
        self.skipped.append(bad)
        return math.nan


def _fields(record: Any, where: str) -> None:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object")
    lacking = [k for k in ("id", "task", "status") if k not in record]
    if "model" not in record:
        lacking.append("model (the generator; pass it through from the sample)")
    if lacking:
        raise InputError(f"{where}: missing field(s) {', '.join(lacking)}")


def records_to_frame(
    records: Iterable[dict[str, Any]],
    missing: MissingPolicy = "cell",
    source: str = "records",
    lenient: bool = False,
    lines: list[int] | None = None,
) -> pd.DataFrame:
    """Turn cigeval result records (``Score.to_record`` dicts) into an evaluator frame.

    SC is ``dimensions.SC`` when present, else ``score``; PQ and O come from ``dimensions``
    (O falls back to sqrt(SC * PQ)). A record with status ``error`` is a failed evaluation.
    Records must carry ``id``, ``task`` and the generator ``model`` (a pass-through field).
    Each row keeps its run ``fingerprint``; within a run the last record of an id wins
    (``attrs``: ``duplicate_ids``, ``duplicates_dropped``, and ``run_settings``, the settings of
    each fingerprint). ``lines`` gives each record's line number in ``source`` for messages.
    """
    from cigeval.results import last_record_per_id
    from cigeval.results.fingerprint import fingerprint_of, settings_of_record

    reader = _Reader(source, lenient)
    numbered = []
    for i, record in enumerate(records):
        line = lines[i] if lines is not None and i < len(lines) else None
        _fields(record, f"{source} line {line}" if line else f"{source} record {i + 1}")
        numbered.append({**record, "_line": line})
    runs: dict[str, list[dict[str, Any]]] = {}
    settings: dict[str, Any] = {}
    for record in numbered:
        fingerprint = fingerprint_of(record)
        runs.setdefault(fingerprint, []).append(record)
        settings.setdefault(fingerprint, settings_of_record(record))
    rows: dict[str, list[Any]] = {k: [] for k in (*KEY, *DIMENSIONS, "failed", "fingerprint")}
    duplicates: list[str] = []
    kept = 0
    for fingerprint, run in runs.items():
        for record in last_record_per_id(run, duplicates):
            _add_row(rows, record, fingerprint, reader)
            kept += 1
    frame = evaluator_frame(rows, missing, source, "cigeval")
    frame.attrs.update(
        skipped_cells=reader.skipped,
        duplicate_ids=duplicates,
        duplicates_dropped=len(numbered) - kept,
        run_settings=settings,
    )
    return frame


def _add_row(
    rows: dict[str, list[Any]], record: dict[str, Any], fingerprint: str, reader: _Reader
) -> None:
    line = record["_line"]
    low, high = record_score_range(record)
    failed = record["status"] != "ok"
    dims = record.get("dimensions") or {}
    if not isinstance(dims, dict):
        dims = {}
    sc_field = "dimensions.SC" if "SC" in dims else "score"
    sc = reader.number(dims.get("SC", record.get("score")), sc_field, line, low, high)
    pq = reader.number(dims.get("PQ"), "dimensions.PQ", line, low, high)
    overall = reader.number(dims.get("O"), "dimensions.O", line, low, high)
    if math.isnan(overall) and not (math.isnan(sc) or math.isnan(pq)):
        overall = math.sqrt(sc * pq) if low >= 0 else math.nan
    if failed:
        sc = pq = overall = math.nan
    rows["task"].append(task_id(str(record["task"])))
    rows["model"].append(str(record["model"]))
    rows["uid"].append(record_uid(record))
    rows["SC"].append(sc)
    rows["PQ"].append(pq)
    rows["O"].append(overall)
    rows["failed"].append(failed)
    rows["fingerprint"].append(fingerprint)


def _record_lines(path: Path, skipped_numbers: set[int]) -> list[int]:
    """The line number of each record :func:`cigeval.results.read_records` yields: every
    non-blank line it did not skip."""
    numbers = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip() and number not in skipped_numbers:
                numbers.append(number)
    return numbers


def load_cigeval_results(
    path: str | Path, missing: MissingPolicy = "cell", lenient: bool = False
) -> pd.DataFrame:
    """Read a cigeval results JSONL file into an evaluator frame (see :func:`records_to_frame`).

    Lines that cannot be read are skipped (the one policy of :func:`cigeval.read_records`) and
    listed in ``frame.attrs["skipped_lines"]``, so the coverage report can name them.
    """
    from cigeval.results import SkippedLine, read_records

    if not Path(path).is_file():
        raise InputError(f"cannot read results file {path}: no such file")
    skipped: list[SkippedLine] = []
    records = list(read_records(path, skipped))
    lines = _record_lines(Path(path), {s.line_number for s in skipped})
    frame = records_to_frame(
        records,
        missing=missing,
        source=str(path),
        lenient=lenient,
        lines=lines if len(lines) == len(records) else None,
    )
    frame.attrs["skipped_lines"] = [str(s) for s in skipped]
    return frame
