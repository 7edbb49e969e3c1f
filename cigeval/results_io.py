"""Results JSONL: append one record per finished sample, survive kill -9, resume."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cigeval.score import Score


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the complete records of a results file, skipping a torn last line."""
    path = Path(path)
    if not path.exists():
        return
    with path.open("r", encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break  # written partially when the previous run was killed
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "id" in record:
                yield record


def repair_tail(path: Path) -> int:
    """Cut a partially written last line off ``path``; returns the number of bytes removed."""
    if not path.exists():
        return 0
    with path.open("rb+") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size == 0:
            return 0
        position = size
        chunk = 65536
        while position > 0:
            start = max(0, position - chunk)
            handle.seek(start)
            data = handle.read(position - start)
            newline = data.rfind(b"\n")
            if newline != -1:
                keep = start + newline + 1
                break
            position = start
        else:
            keep = 0
        if keep == size:
            return 0
        handle.truncate(keep)
        return size - keep


class ResultsWriter:
    """Appends records as samples finish; each line is flushed and fsynced at once.

    With ``resume`` the existing file is kept: a torn last line is removed, and
    :attr:`finished` holds the ids already recorded so they are skipped. With
    ``retry_errors`` records with status ``error`` are dropped (atomically) so those samples
    run again. Without ``resume`` an existing file is replaced.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        resume: bool = True,
        retry_errors: bool = False,
        include_trace: bool = True,
    ) -> None:
        self.path = Path(path)
        self.include_trace = include_trace
        self.finished: set[str] = set()
        #: Status of each record kept from an earlier run, by id.
        self.previous_statuses: dict[str, str] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists():
            repair_tail(self.path)
            records = list(read_records(self.path))
            if retry_errors:
                kept = [r for r in records if r.get("status") == "ok"]
                if len(kept) != len(records):
                    self._rewrite(kept)
                records = kept
            self.previous_statuses = {str(r["id"]): str(r.get("status")) for r in records}
            self.finished = set(self.previous_statuses)
        elif self.path.exists():
            self.path.unlink()
        self._handle: IO[str] = self.path.open("a", encoding="utf-8")

    def _rewrite(self, records: list[dict[str, Any]]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)

    def write(self, score: Score) -> None:
        """Append one record (a single write of a complete line)."""
        line = json.dumps(score.to_record(self.include_trace), ensure_ascii=False) + "\n"
        self._handle.write(line)
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.finished.add(score.id)

    def close(self) -> None:
        """Close the file."""
        self._handle.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
