"""Results JSONL: one record per line, appended as samples finish; survives kill -9; resumes.

One policy for lines that cannot be read, wherever results are read (resume, meta-evaluation,
trajectory export, reports): the line is skipped, never fatal, and listed with its number and
the reason when the caller passes a ``skipped`` list. A last line without its newline is what
a killed run leaves behind; it is skipped the same way. A resumed run repairs the file: such
lines are moved, byte for byte, to ``<results>.rejected`` (nothing is lost silently) and the
file keeps only whole records.

Every line written is valid UTF-8: text holding lone surrogates is made safe first.

Durability: each record is handed to the operating system as one write when its sample ends,
so a killed process (kill -9, a crash) loses no finished record. It reaches the disk at the
next fsync, made off the writing thread at most :data:`~cigeval.results.syncing.SYNC_INTERVAL_S`
(1 s) after it or once :data:`~cigeval.results.syncing.SYNC_RECORDS` (64) records wait, and at
close: a power cut or an OS crash can lose the records of that last second (at most 64), whose
samples are judged again by the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from cigeval._unicode import safe_text
from cigeval.errors import ResultsWriteError
from cigeval.results.fingerprint import (
    MixedSettings,
    compute_fingerprint,
    differing_settings,
    fingerprint_of,
    settings_of_record,
)
from cigeval.results.lock import ResultsLock, planted_link_error
from cigeval.results.syncing import SYNC_INTERVAL_S, SYNC_RECORDS, BatchedSync

if TYPE_CHECKING:
    from cigeval.score import Score


@dataclass(frozen=True)
class SkippedLine:
    """A results line that was not read: its 1-based number and why."""

    line_number: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line_number}: {self.reason}"


#: 19 digits in a row: the line may hold an integer beyond 64 bits, which json reads exactly.
_LONG_DIGITS = re.compile(rb"\d{19}")


def _record(raw: bytes) -> dict[str, Any] | str:
    """The record on one line, or the reason it is not one."""
    if _LONG_DIGITS.search(raw):  # orjson would turn an integer past 64 bits into a float
        record, reason = _read_by_json(raw)
    else:
        try:
            record, reason = orjson.loads(raw), None  # a few times faster than json
        except orjson.JSONDecodeError:  # bad bytes or JSON, or what only json reads (NaN)
            record, reason = _read_by_json(raw)
    if reason is not None:
        return reason
    if not isinstance(record, dict) or "id" not in record:
        return "not a results record (a JSON object with an id)"
    return record


def _read_by_json(raw: bytes) -> tuple[Any, str | None]:
    """(the value on the line, None), read by the standard json module, or (None, why not)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 ({exc.reason} at byte {exc.start})"
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({str(exc)[:80]})"


def rejected_path(path: str | Path) -> Path:
    """Where a resumed run moves the unreadable lines of ``path``: ``<name>.rejected``."""
    path = Path(path)
    return path.with_name(path.name + ".rejected")


def rewrite_path(path: str | Path) -> Path:
    """The temporary file a resume's rewrite of ``path`` goes through: ``<name>.tmp``."""
    path = Path(path)
    return path.with_name(path.name + ".tmp")


def overwritten_path(path: str | Path) -> Path:
    """Where a writer that does not resume moves the old ``path`` until it is closed:
    ``<name>.overwritten`` (the old results survive a run that dies before its end)."""
    path = Path(path)
    return path.with_name(path.name + ".overwritten")


#: Opens a file without following a symbolic link planted at its name (none on Windows).
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def open_beside(path: Path, *, new: bool = False) -> IO[bytes]:
    """Open a file a run writes next to its results, for appending (``new``: created afresh,
    an older file of that name removed first), never through a symbolic link: a link planted
    at that name raises OSError (ELOOP) and its target is left alone."""
    flags = os.O_WRONLY | os.O_CREAT | _NO_FOLLOW
    if new:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a link is removed itself, never its target
        flags |= os.O_EXCL
    else:
        flags |= os.O_APPEND
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise planted_link_error(path, exc) from None
    return os.fdopen(fd, "wb")


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


def last_record_per_id(
    records: Iterable[dict[str, Any]], duplicates: list[str] | None = None
) -> list[dict[str, Any]]:
    """One record per sample id, the last one written winning (a rerun's record replaces the
    earlier one), in the order each id first appeared.

    Pass a list as ``duplicates`` to learn which ids appeared more than once (each listed
    once). Everything that counts samples (reports, meta-evaluation, exports) uses this rule,
    so ``n`` counts samples, never lines.
    """
    latest: dict[str, dict[str, Any]] = {}
    repeated: dict[str, None] = {}
    for record in records:
        key = str(record.get("id"))
        if key in latest:
            repeated[key] = None
        latest[key] = record
    if duplicates is not None:
        duplicates.extend(repeated)
    return list(latest.values())


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
    """Appends records as samples finish: each line written to the file at once, fsynced in
    batches from a thread of its own (at most ``sync_interval_s`` later, or once
    ``sync_records`` records wait; see the module docstring for what that guarantees).

    With ``resume`` the existing file is kept and repaired: lines that cannot be read (a torn
    last line, a bad byte, a line that is not a record) are moved to :func:`rejected_path`
    and listed in :attr:`skipped`, and :attr:`finished` holds the ids already recorded so
    they are skipped. With ``retry_errors`` records with status ``error`` are dropped (their
    ids are in :attr:`retrying`) so those samples run again. Without ``resume`` an existing
    file is replaced. Rewrites are atomic. With ``lock`` (the default) the writer holds the
    file's :class:`~cigeval.results.lock.ResultsLock` until :meth:`close`, so a second writer
    on the same file fails with :class:`~cigeval.results.lock.ResultsLocked`.

    ``settings`` (:func:`~cigeval.results.fingerprint.fingerprint_settings` of the run) makes
    a resumed file with records of another fingerprint (among those kept) raise
    :class:`~cigeval.results.fingerprint.MixedSettings` before the file is changed, unless
    ``allow_mixed_settings``. A record that cannot be written (a full disk, permissions)
    raises :class:`~cigeval.errors.ResultsWriteError`; the file is cut back to its last
    complete record first.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        resume: bool = True,
        retry_errors: bool = False,
        include_trace: bool = True,
        lock: bool = True,
        settings: Mapping[str, Any] | None = None,
        allow_mixed_settings: bool = False,
        sync_interval_s: float = SYNC_INTERVAL_S,
        sync_records: int = SYNC_RECORDS,
    ) -> None:
        self.path = Path(path)
        self.include_trace = include_trace
        self._settings = settings if not allow_mixed_settings else None
        self.finished: set[str] = set()
        self.skipped: list[SkippedLine] = []
        #: Ids whose error records were dropped by ``retry_errors`` (to be judged again).
        self.retrying: set[str] = set()
        #: Status of each record kept from an earlier run, by id.
        self.previous_statuses: dict[str, str] = {}
        #: The sha256 of the image files each kept record judged (``provenance.image_files``),
        #: by id, for the records that keep them.
        self.previous_images: dict[str, dict[str, str]] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        #: The old file moved aside by a writer that does not resume (removed at close).
        self._aside: Path | None = None
        self._lock = ResultsLock(self.path) if lock else None
        if self._lock is not None:
            self._lock.acquire()
        try:
            if resume and self.path.exists():
                self._resume(retry_errors)
            elif self.path.exists() or self.path.is_symlink():
                # Moved aside, never truncated in place: removed once the run ends.
                os.replace(self.path, overwritten_path(self.path))
                self._aside = overwritten_path(self.path)
            # Unbuffered: each record is one write of a complete line, so a failed write
            # leaves nothing in a buffer to be flushed (and fail again) at close.
            self._handle: IO[bytes] = self.path.open("ab", buffering=0)
            if self._lock is not None:
                self._lock.hold_file()  # the file may be new or replaced by the resume
            self._sync = BatchedSync(self._handle.fileno(), sync_interval_s, sync_records)
        except BaseException:
            if self._lock is not None:
                self._lock.release()
            raise

    @property
    def rejected_path(self) -> Path:
        """Where unreadable lines of the file were moved (see :attr:`skipped`)."""
        return rejected_path(self.path)

    def _resume(self, retry_errors: bool) -> None:
        statuses: dict[int, tuple[str, str]] = {}
        images: dict[int, dict[str, str]] = {}
        other_settings: dict[int, dict[str, Any]] = {}  # records of another fingerprint
        expected = compute_fingerprint(self._settings) if self._settings is not None else None
        torn_at: int | None = None  # offset of a last line without its newline
        offset = 0
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                if not raw.endswith(b"\n"):
                    found: dict[str, Any] | str = "incomplete last line (a run was interrupted)"
                    torn_at = start
                else:
                    found = _record(raw)
                if isinstance(found, str):
                    self.skipped.append(SkippedLine(number, found))
                else:
                    statuses[number] = (str(found["id"]), str(found.get("status")))
                    kept_images = _image_files(found)
                    if kept_images is not None:
                        images[number] = kept_images
                    if expected is not None and fingerprint_of(found) != expected:
                        other_settings[number] = found
        drop = {line.line_number for line in self.skipped}
        if retry_errors:
            errors = {n for n, (_, status) in statuses.items() if status != "ok"}
            self.retrying = {statuses[n][0] for n in errors}
            drop |= errors
        self._refuse_other_settings({n: r for n, r in other_settings.items() if n not in drop})
        if drop and torn_at is not None and len(drop) == 1:
            self._cut_torn_tail(torn_at)  # the usual damage after a kill: no rewrite needed
        elif drop:
            self._rewrite_without(drop, {line.line_number for line in self.skipped})
        self.previous_statuses = {i: st for n, (i, st) in statuses.items() if n not in drop}
        self.previous_images = {statuses[n][0]: h for n, h in images.items() if n not in drop}
        self.finished = set(self.previous_statuses)

    def _refuse_other_settings(self, kept: dict[int, dict[str, Any]]) -> None:
        """MixedSettings naming what differs, when kept records have another fingerprint."""
        if not kept or self._settings is None:
            return
        differing: dict[str, None] = {}
        seen: set[str] = set()
        for record in kept.values():
            fingerprint = fingerprint_of(record)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            names = differing_settings(settings_of_record(record), self._settings)
            differing.update(dict.fromkeys(names))
        raise MixedSettings(self.path, len(kept), list(differing))

    def _cut_torn_tail(self, offset: int) -> None:
        """Move the bytes after ``offset`` to the side file and cut them off."""
        with self.path.open("rb+") as handle:
            handle.seek(offset)
            tail = handle.read()
            with open_beside(self.rejected_path) as side:
                side.write(tail + b"\n")
                side.flush()
                os.fsync(side.fileno())
            handle.truncate(offset)
            handle.flush()
            os.fsync(handle.fileno())

    def _rewrite_without(self, drop: set[int], rejected: set[int]) -> None:
        """Copy the file without the lines ``drop``; lines in ``rejected`` go to the side file."""
        temporary = rewrite_path(self.path)
        side: IO[bytes] | None = None
        try:
            with self.path.open("rb") as source, open_beside(temporary, new=True) as target:
                for number, raw in enumerate(source, start=1):
                    if number not in drop:
                        target.write(raw)
                    elif number in rejected:
                        if side is None:
                            side = open_beside(self.rejected_path)
                        side.write(raw if raw.endswith(b"\n") else raw + b"\n")
                target.flush()
                os.fsync(target.fileno())
            if side is not None:
                side.flush()
                os.fsync(side.fileno())
        finally:
            if side is not None:
                side.close()
        os.replace(temporary, self.path)

    def write(self, score: Score) -> None:
        """Append one record (a single write of a complete line of valid UTF-8).

        A record that cannot be serialised (a value JSON cannot hold, nesting too deep) is
        replaced by an ``error`` record saying so: one sample never stops the others.
        """
        try:
            line = json.dumps(score.to_record(self.include_trace), ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as exc:
            line = json.dumps(_unwritable_record(score, exc), ensure_ascii=False)
        try:
            data = (line + "\n").encode("utf-8")
        except UnicodeEncodeError:
            data = (safe_text(line) + "\n").encode("utf-8")
        self._append(data)
        self.finished.add(safe_text(score.id))

    def _append(self, data: bytes) -> None:
        """Write ``data`` whole (its fsync follows in a batch); on failure cut the file back to
        where it ended and raise ResultsWriteError (the file keeps only complete records)."""
        fd = self._handle.fileno()
        end = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except OSError as exc:
            # Should the cut fail too, the reader skips a torn last line and a resume moves
            # it aside.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            reason = exc.strerror or str(exc)
            raise ResultsWriteError(
                f"cannot write to {self.path}: {reason}; it ends with its last complete "
                "record, so rerunning the same command resumes once that is fixed"
            ) from None
        try:
            self._sync.wrote()
        except OSError as exc:
            raise self._sync_failed(exc) from None

    def _sync_failed(self, exc: OSError) -> ResultsWriteError:
        reason = exc.strerror or str(exc)
        return ResultsWriteError(
            f"cannot flush {self.path} to disk: {reason}; its records are complete but may "
            "not survive a power cut, and rerunning the same command resumes from them"
        )

    def close(self) -> None:
        """fsync what is left, close the file and release its lock (a failed fsync is then
        raised as ResultsWriteError)."""
        failure: ResultsWriteError | None = None
        try:
            try:
                self._sync.close()
            except OSError as exc:
                failure = self._sync_failed(exc)
            self._handle.close()
            if self._aside is not None:
                with contextlib.suppress(OSError):
                    self._aside.unlink()
        finally:
            if self._lock is not None:
                self._lock.release()
        if failure is not None:
            raise failure

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _image_files(record: dict[str, Any]) -> dict[str, str] | None:
    """A record's ``provenance.image_files`` (role -> sha256), when it holds a valid one."""
    provenance = record.get("provenance")
    files = provenance.get("image_files") if isinstance(provenance, dict) else None
    if not isinstance(files, dict):
        return None
    return {str(role): str(digest) for role, digest in files.items()}


def _unwritable_record(score: Score, exc: BaseException) -> dict[str, Any]:
    """The error record written in place of one that cannot be serialised."""
    return {
        "id": safe_text(str(score.id)),
        "task": safe_text(str(score.task)),
        "rubric": safe_text(str(score.rubric)),
        "status": "error",
        "score": None,
        "sub_scores": [],
        "error": f"the record could not be written ({type(exc).__name__}: {str(exc)[:200]})",
        "judge": score.judge,
        "config": score.config,
        "provenance": score.provenance,
        "fingerprint": score.fingerprint,
    }
