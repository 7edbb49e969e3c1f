"""How samples and records travel between the driver and the Ray workers: as JSON text.

Rows cross the cluster as Arrow tables. Nested sample dicts would make Arrow infer (and
null-fill) a schema per block, so the command line sends each samples line as one JSON
string (:data:`LINE_COLUMN`) and every worker sends each record back as one JSON string
(:data:`RECORD_COLUMN`), with its ``id`` and ``status`` beside it for filtering.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from cigeval.results.jsonl import _unwritable_record
from cigeval.sample import (
    ERROR_ID_PREFIX,
    Sample,
    SampleLine,
    sample_from_dict,
    sample_identity,
    sample_line,
)
from cigeval.score import Score

#: The column holding one samples-file line as JSON (what ``cigeval evaluate`` sends).
LINE_COLUMN = "cigeval_line"
#: The column holding a sample given in Python (a Sample or a dict), pickled with whether
#: to bypass cached answers: it may hold images in memory, which JSON cannot carry.
ITEM_COLUMN = "cigeval_item"
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
        "error_id_prefix": line.error_id_prefix,
    }
    return {LINE_COLUMN: json.dumps(payload)}


def encode_items(items: Iterable[Any], refresh_ids: Collection[str] = ()) -> list[dict[str, Any]]:
    """Rows carrying ``items`` to the workers, one per item: samples-file lines as JSON
    (:func:`encode_line`), anything else (Samples, dicts) pickled in :data:`ITEM_COLUMN`.

    Items whose id is in ``refresh_ids`` are judged without cached answers. One column for
    the whole run: a run that mixes lines with other items sends every item pickled.
    """
    listed = list(items)
    if all(isinstance(item, SampleLine) for item in listed):
        return [encode_line(x, refresh=x.sample_id in refresh_ids) for x in listed]
    return [
        {ITEM_COLUMN: pickle.dumps((item, sample_identity(item)[0] in refresh_ids))}
        for item in listed
    ]


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
    if ITEM_COLUMN in row:
        item, refresh = pickle.loads(row[ITEM_COLUMN])
        return _with_base_dir(item, base_dir), bool(refresh)
    sample = _without_nulls(row)
    try:
        return sample_from_dict(sample, Path(base_dir) if base_dir else None), False
    except Exception:
        return sample, False


def _with_base_dir(item: Any, base_dir: str | None) -> Any:
    """A pickled item as the worker judges it: relative image paths of a Sample or dict
    without its own base folder resolve against the driver's ``base_dir``."""
    if base_dir is None:
        return item
    if isinstance(item, Sample) and item.base_dir is None:
        return item.model_copy(update={"base_dir": Path(base_dir)})
    if isinstance(item, SampleLine) and item.sample is not None and item.sample.base_dir is None:
        sample = item.sample.model_copy(update={"base_dir": Path(base_dir)})
        return item.model_copy(update={"sample": sample})
    if isinstance(item, dict):
        try:
            return sample_from_dict(item, Path(base_dir))
        except Exception:
            return item  # judged as it is: the evaluator records what is wrong with it
    return item


def _decode_line(payload: dict[str, Any]) -> SampleLine:
    number = int(payload["line_number"])
    raw = payload.get("raw")
    if payload.get("error") is not None or not isinstance(raw, dict):
        error = payload.get("error") or f"line {number}: expected a JSON object"
        return SampleLine(
            line_number=number,
            raw=raw if isinstance(raw, dict) else None,
            error=error,
            error_id_prefix=payload.get("error_id_prefix") or ERROR_ID_PREFIX,
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
