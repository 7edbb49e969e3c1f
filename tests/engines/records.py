"""Comparing results records of two runs, leaving out only what legitimately differs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cigeval.results.jsonl import read_records

#: Trace event fields that are clock readings (when, how long), never answers.
CLOCK_FIELDS = ("time", "latency_s")


def normalised(record: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """``record`` without its clock readings, and with what depends on where it was written
    made relative.

    Left out or changed, and nothing else: ``usage.wall_ms``; each trace event's ``time``
    and ``latency_s``; the order of trace events (sub-questions of a sample run
    concurrently, so their events interleave in whatever order the calls end, in either
    engine: the events are compared as a sorted list); the folder of ``image_files``
    (each run keeps images next to its own ``--out``).
    """
    record = json.loads(json.dumps(record))
    record.get("usage", {}).pop("wall_ms", None)
    events = record.get("trace", [])
    for event in events:
        for name in CLOCK_FIELDS:
            event.pop(name, None)
    record["trace"] = sorted(events, key=lambda e: json.dumps(e, sort_keys=True))
    prefix = str(out_dir) + "/"
    files = record.get("image_files", {})
    record["image_files"] = {sha: path.replace(prefix, "<out>/", 1) for sha, path in files.items()}
    return record


def records_by_id(path: Path) -> dict[str, dict[str, Any]]:
    """The normalised records of a results file, by id (a repeated id fails the test)."""
    found: dict[str, dict[str, Any]] = {}
    for record in read_records(path):
        assert record["id"] not in found, f"id {record['id']!r} written twice"
        found[record["id"]] = normalised(record, path.parent)
    return found
