"""The record of submitted batches, kept in a JSON file so a killed run resumes polling them.

Each batch is recorded as soon as the provider has created it, before any polling: a run
killed between submit and download finds its requests (by ``custom_id``, the answer cache
key of the request) in this file and waits for that batch instead of paying for them again.
The file is rewritten whole through a temporary file and :func:`os.replace`, so a kill leaves
either the old record or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cigeval.errors import ConfigError

#: Bumped if the file's layout changes.
STATE_FORMAT = 1


@dataclass
class BatchRecord:
    """One batch as submitted: which requests it holds and where it stands.

    ``model`` is the backend identity and ``endpoint`` the server holding the batch;
    ``stage`` counts the run's flushes (1: the first stage sent); ``downloaded`` is True once
    its replies were read (and cached).
    """

    id: str
    model: str
    endpoint: str
    custom_ids: list[str]
    stage: int
    status: str = "validating"
    input_file_id: str = ""
    submitted_at: float = 0.0
    downloaded: bool = False
    resumed: bool = field(default=False, compare=False)


class BatchState:
    """The submitted batches of one results file (``path``), or of this process (None)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._records: dict[str, BatchRecord] = {}
        self._by_custom_id: dict[str, str] = {}
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def __repr__(self) -> str:
        return f"BatchState({str(self.path) if self.path else None!r})"

    def records(self) -> list[BatchRecord]:
        """Every recorded batch, oldest first."""
        return list(self._records.values())

    def batch_for(self, custom_id: str) -> BatchRecord | None:
        """The latest recorded batch holding ``custom_id``, or None."""
        batch_id = self._by_custom_id.get(custom_id)
        return self._records.get(batch_id) if batch_id is not None else None

    def add(self, record: BatchRecord) -> None:
        """Record a newly created batch (written to disk before this returns)."""
        with self._lock:
            self._records[record.id] = record
            for custom_id in record.custom_ids:
                self._by_custom_id[custom_id] = record.id
            self._save()

    def update(self, record: BatchRecord) -> None:
        """Write a recorded batch's changed status."""
        with self._lock:
            self._records[record.id] = record
            self._save()

    def forget(self, custom_ids: list[str] | set[str]) -> None:
        """Stop pointing ``custom_ids`` at their batches: their replies failed or proved
        unusable, so a later run asks again rather than replaying them."""
        with self._lock:
            changed = False
            for custom_id in custom_ids:
                batch_id = self._by_custom_id.pop(custom_id, None)
                record = self._records.get(batch_id) if batch_id else None
                if record is not None and custom_id in record.custom_ids:
                    record.custom_ids = [c for c in record.custom_ids if c != custom_id]
                    changed = True
            if changed:
                self._save()

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
                raise ValueError(f"not a format-{STATE_FORMAT} batch record")
            for entry in data["batches"]:
                record = BatchRecord(**entry, resumed=True)
                self._records[record.id] = record
                for custom_id in record.custom_ids:
                    self._by_custom_id[custom_id] = record.id
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"cannot read the batch record {path} ({exc}); it lists the batches a "
                "previous run submitted. Fix or move the file (without it, requests already "
                "in a batch are submitted and paid for again)"
            ) from None

    def _save(self) -> None:
        if self.path is None:
            return
        entries: list[dict[str, Any]] = []
        for record in self._records.values():
            entry = asdict(record)
            del entry["resumed"]
            entries.append(entry)
        data = json.dumps({"format": STATE_FORMAT, "batches": entries}).encode("ascii")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=self.path.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                Path(temp).unlink(missing_ok=True)
            raise
