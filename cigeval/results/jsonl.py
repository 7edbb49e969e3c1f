"""Results JSONL: one record per line, appended as samples finish; survives kill -9; resumes.

One policy for lines that cannot be read, wherever results are read (resume, meta-evaluation,
trajectory export, reports): the line is skipped, never fatal, and listed with its number and
the reason when the caller passes a ``skipped`` list. A last line without its newline is what
a killed run leaves behind; it is skipped the same way (and cut off before a resumed run
appends).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cigeval.score import Score


@dataclass(frozen=True)
class SkippedLine:
    """A results line that was not read: its 1-based number and why."""

    line_number: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line_number}: {self.reason}"


def _record(raw: bytes) -> dict[str, Any] | str:
    """The record on one line, or the reason it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 ({exc.reason} at byte {exc.start})"
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({str(exc)[:80]})"
    if not isinstance(record, dict) or "id" not in record:
        return "not a results record (a JSON object with an id)"
    return record


def read_records(
    path: str | Path, skipped: list[SkippedLine] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the records of a results file, in order; unreadable lines are skipped.

    Pass a list as ``skipped`` to learn which lines were skipped and why. A missing file has
    no records.
    """
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if not raw.endswith(b"\n"):
                reason: dict[str, Any] | str = "incomplete last line (a run was interrupted)"
            else:
                reason = _record(raw)
            if isinstance(reason, dict):
                yield reason
            elif skipped is not None:
                skipped.append(SkippedLine(number, reason))


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
    run again. Without ``resume`` an existing file is replaced. Lines that cannot be read are
    listed in :attr:`skipped`.
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
        self.skipped: list[SkippedLine] = []
        #: Status of each record kept from an earlier run, by id.
        self.previous_statuses: dict[str, str] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists():
            repair_tail(self.path)
            records = list(read_records(self.path, self.skipped))
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
