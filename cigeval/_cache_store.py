"""Where the response cache (and the report's thumbnail cache) keeps its entries: one SQLite
file, an index of every entry. It imports nothing of cigeval, so a report loads no backend.

``<directory>/cache.sqlite3`` holds one row per entry, ``(namespace, key) -> value``, so a
cached call is one indexed read rather than a file opened per answer. SQLite makes each
write atomic (a reader sees no entry or a whole one, whatever writers do: threads, processes,
a process killed half-way) and serialises writers across processes; the file uses
write-ahead logging, which lets readers go on while one writer writes.

Caches written by cigeval 0.2 and 0.3 before this store (one JSON file per entry, under
``<directory>/<namespace>/<k[:2]>/<k[2:4]>/<k>.json``) are still read: an entry missing from
the index is looked for there. New entries only go to the index.

A cache that cannot be read or written (a full disk, a folder without permission, a file in
the way) is a miss, with one warning from :class:`~cigeval.backends.cache.ResponseCache`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from pathlib import Path

from cigeval._regular_file import check_regular, read_regular

#: The file of the index, in the cache directory.
INDEX_NAME = "cache.sqlite3"
#: How long a writer waits for another process's write to finish, in seconds.
BUSY_TIMEOUT_S = 30.0
#: One entry written (replacing any earlier value of its key).
#: The largest entry file of the one-file-per-entry layout that is read (an answer, an encoding).
_LEGACY_MOST = 256 * 1024 * 1024
_INSERT = "INSERT OR REPLACE INTO entries (namespace, key, value, written) VALUES (?, ?, ?, ?)"


class CacheStore:
    """Byte values under (namespace, key) in ``directory``: the SQLite index, with the
    one-file-per-entry layout of earlier versions read as a fallback.

    Every method raises ``OSError`` or ``sqlite3.Error`` for a disk or database problem; the
    caller decides what that means (for the response cache, a miss).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._local = threading.local()
        self._legacy: dict[str, bool] = {}

    @property
    def index_path(self) -> Path:
        """The SQLite file."""
        return self.directory / INDEX_NAME

    def legacy_path(self, namespace: str, hex_key: str) -> Path:
        """Where the one-file-per-entry layout kept ``hex_key`` of ``namespace``."""
        return self.directory / namespace / hex_key[:2] / hex_key[2:4] / f"{hex_key}.json"

    def get(self, namespace: str, hex_key: str) -> bytes | None:
        """The value stored under ``hex_key``, from the index or else a legacy entry file."""
        row = (
            self._connection()
            .execute(
                "SELECT value FROM entries WHERE namespace = ? AND key = ?", (namespace, hex_key)
            )
            .fetchone()
        )
        if row is not None:
            return bytes(row[0])
        if self._has_legacy(namespace):
            try:
                return read_regular(self.legacy_path(namespace, hex_key), _LEGACY_MOST)
            except FileNotFoundError:
                return None
        return None

    def put(self, namespace: str, hex_key: str, value: bytes) -> None:
        """Store ``value`` under ``hex_key`` (replacing any earlier value), atomically."""
        self._connection().execute(  # one statement: its own transaction
            _INSERT, (namespace, hex_key, value, time.time())
        )

    def put_many(self, namespace: str, items: list[tuple[str, bytes]]) -> None:
        """Store every (key, value) of ``items`` in one transaction: all of them or none."""
        connection = self._connection()
        written = time.time()
        connection.execute("BEGIN")
        try:
            connection.executemany(
                _INSERT, [(namespace, key, value, written) for key, value in items]
            )
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def delete(self, namespace: str, hex_key: str) -> None:
        """Forget ``hex_key`` (in the index and in the legacy layout)."""
        self._connection().execute(
            "DELETE FROM entries WHERE namespace = ? AND key = ?", (namespace, hex_key)
        )
        if self._has_legacy(namespace):
            self.legacy_path(namespace, hex_key).unlink(missing_ok=True)

    def _has_legacy(self, namespace: str) -> bool:
        """Whether the directory holds entries of the one-file-per-entry layout (looked at
        once per namespace)."""
        found = self._legacy.get(namespace)
        if found is None:
            found = self._legacy[namespace] = (self.directory / namespace).is_dir()
        return found

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork: SQLite connections must not
        cross processes)."""
        local = self._local
        connection: sqlite3.Connection | None = getattr(local, "connection", None)
        if connection is None or local.pid != os.getpid():
            connection = self._connect()
            local.connection, local.pid = connection, os.getpid()
        return connection

    def _connect(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):  # a FIFO or a device is never opened
            check_regular(self.index_path)
        connection = sqlite3.connect(
            self.index_path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            connection.execute("PRAGMA journal_mode=WAL")  # stays as it was where unsupported
            # A cache entry lost to a power cut is asked again: no fsync per entry.
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS entries (namespace TEXT NOT NULL, key TEXT NOT NULL, "
                "value BLOB NOT NULL, written REAL NOT NULL, PRIMARY KEY (namespace, key)) "
                "WITHOUT ROWID"
            )
        except BaseException:
            connection.close()
            raise
        return connection

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
