"""How samples and records travel between the driver and the Ray workers: as JSON text.

Rows cross the cluster as Arrow tables. Nested sample dicts would make Arrow infer (and
null-fill) a schema per block, so the command line sends each samples line as one JSON
string (:data:`LINE_COLUMN`) and every worker sends each record back as one JSON string
(:data:`RECORD_COLUMN`), with its ``id`` and ``status`` beside it for filtering.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cigeval.results.jsonl import _unwritable_record
from cigeval.sample import Sample, SampleLine, sample_from_dict, sample_line
from cigeval.score import Score

#: The column holding one samples-file line as JSON (what ``cigeval evaluate`` sends).
LINE_COLUMN = "cigeval_line"
#: The column holding one results record as JSON (what the workers send back).
RECORD_COLUMN = "record"


def encode_line(line: SampleLine, *, refresh: bool = False) -> dict[str, str]:
    """A row carrying ``line`` (its raw JSON, any error, where its images are) to a worker.

    ``refresh`` asks the worker to judge it without cached answers (``--retry-errors``).
    """
    base_dir = line.sample.base_dir if line.sample is not None else None
    payload = {
        "line_number": line.line_number,
        "raw": line.raw,
        "error": line.error,
        "base_dir": str(base_dir) if base_dir is not None else None,
        "refresh": refresh,
    }
    return {LINE_COLUMN: json.dumps(payload)}


def decode_row(
    row: dict[str, Any], base_dir: str | None
) -> tuple[SampleLine | Sample | dict[str, Any], bool]:
    """What a worker judges for one row, and whether to bypass cached answers.

    A :data:`LINE_COLUMN` row becomes the same :class:`SampleLine` the local engine reads
    from the file; any other row is a sample itself (nulls, which Arrow puts where a row
    lacks a column, count as absent; relative image paths resolve against ``base_dir``).
    A row that is not a valid sample is returned as it is: the evaluator turns it into an
    ``error`` record naming the problem, exactly as it does locally.
    """
    if LINE_COLUMN in row:
        payload = json.loads(row[LINE_COLUMN])
        return _decode_line(payload), bool(payload.get("refresh"))
    sample = _without_nulls(row)
    try:
        return sample_from_dict(sample, Path(base_dir) if base_dir else None), False
    except Exception:
        return sample, False


def _decode_line(payload: dict[str, Any]) -> SampleLine:
    number = int(payload["line_number"])
    raw = payload.get("raw")
    if payload.get("error") is not None or not isinstance(raw, dict):
        error = payload.get("error") or f"line {number}: expected a JSON object"
        return SampleLine(
            line_number=number, raw=raw if isinstance(raw, dict) else None, error=error
        )
    base_dir = Path(payload["base_dir"]) if payload.get("base_dir") else None
    # The driver validated this line already; a worker validates it again with the same
    # task registry (the driver's tasks are shipped to every worker), so this normally
    # succeeds, and a failure is recorded the way the samples reader records one.
    return sample_line(raw, number, base_dir)


def _without_nulls(row: dict[str, Any]) -> dict[str, Any]:
    """A dataset row as a sample dict: null fields (and null image roles) left out."""
    sample = {k: v for k, v in row.items() if v is not None}
    images = sample.get("images")
    if isinstance(images, dict):
        sample["images"] = {k: v for k, v in images.items() if v is not None}
    return sample


def encode_score(score: Score) -> dict[str, str]:
    """One output row: the record (with its trace) as JSON, its id and status."""
    try:
        record = json.dumps(score.to_record(include_trace=True))
    except (TypeError, ValueError, RecursionError) as exc:
        record = json.dumps(_unwritable_record(score, exc))
    return {"id": str(score.id), "status": str(score.status), RECORD_COLUMN: record}


def decode_record(row: dict[str, Any]) -> dict[str, Any]:
    """The results record of an output row."""
    record: dict[str, Any] = json.loads(row[RECORD_COLUMN])
    return record
