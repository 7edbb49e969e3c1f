"""One run per results file: an exclusive lock next to it (``results.jsonl.lock``).

The lock keys on the real file: the lock file sits next to the path with symlinks resolved,
and the results file itself (its inode) is locked too, so a second run reaching the same file
through a symlink or a hard link is refused like one using the same name.

Two runs appending to the same file would evaluate every sample twice and write every record
twice. The lock is an operating-system file lock (``flock`` on POSIX, ``msvcrt.locking`` on
Windows), so it is released by the system when its process ends in any way, kill -9
included: a lock is never stale. The lock file holds the process id, host, start time and
command of the run holding it, so a second run can say which one is running; the command is
written with its credentials redacted (:func:`redact_command`), the file is private to the
user (mode 0600) and opened without following a symbolic link planted at its name.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.errors import CigevalError
from cigeval.redact import redact_command
from cigeval.terminal import safe_text

#: Opens the lock file without following a symbolic link planted at its name.
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def planted_link_error(path: Path, exc: OSError) -> OSError:
    """``exc`` (from opening ``path`` without following links) said plainly when ``path`` is
    a symbolic link: it is not followed, and its target is left alone."""
    if not path.is_symlink():
        return exc
    return OSError(
        exc.errno,
        f"{path} is a symbolic link (planted by someone else?); cigeval does not follow it "
        "and leaves its target alone: remove the link, then run again",
    )


class ResultsLocked(CigevalError):
    """Another run holds the lock on a results file; the message names it."""

    def __init__(
        self, path: Path, holder: dict[str, Any] | None, *, other_name: bool = False
    ) -> None:
        self.path = path
        self.holder = holder or {}
        who = "another cigeval run"
        if other_name:
            who += " (through another name of the same file: a hard link)"
        if holder:
            started = holder.get("started")
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else ""
            who += f" (pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
            who += f", started {when}" if when else ""
            command = redact_command(str(holder.get("command") or "").split(" "))
            who += f": {safe_text(command)})" if command else ")"
        super().__init__(
            f"{who} is writing to {path}; wait for it to end, or choose another "
            f"{in_callers_words('--out', 'out path')} "
            f"(the lock is {path.name}.lock and goes away with that run)"
        )


def lock_path(results: str | os.PathLike[str]) -> Path:
    """The lock file of a results file: ``results.jsonl`` -> ``results.jsonl.lock``, next to
    the real file (symlinks resolved)."""
    path = Path(results).resolve()
    return path.with_name(path.name + ".lock")


class ResultsLock:
    """An exclusive, non-blocking lock on the results file ``path``.

    :meth:`acquire` raises :class:`ResultsLocked` at once when another process holds it;
    :meth:`release` (or leaving the ``with`` block) frees it and removes the lock file.
    Whoever replaces the results file while holding the lock calls :meth:`hold_file` again.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.results = Path(path)
        #: The results file with symlinks resolved; the lock file sits next to it.
        self.real = self.results.resolve()
        self.path = lock_path(path)
        self._fd: int | None = None
        self._file_fd: int | None = None

    def __repr__(self) -> str:
        state = "held" if self._fd is not None else "free"
        return f"ResultsLock({str(self.results)!r}, {state})"

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`ResultsLocked` naming the run that holds it."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NO_FOLLOW, 0o600)
            except OSError as exc:
                raise planted_link_error(self.path, exc) from None
            if not _try_lock(fd):
                os.close(fd)
                raise ResultsLocked(self.results, _read_holder(self.path))
            # The holder before us may have removed the file between our open and our lock;
            # then we hold a lock on a file nobody else can see: take the new one instead.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            _unlock(fd)
            os.close(fd)
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.time(),
            "command": redact_command(sys.argv)[:500],
        }
        if sys.platform != "win32":
            os.fchmod(fd, 0o600)  # a lock file left by an older cigeval may be 0644
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(holder).encode("utf-8", "replace"))
        self._fd = fd
        try:
            self.hold_file()
        except BaseException:
            self.release()
            raise

    def hold_file(self) -> None:
        """Lock the results file itself (its inode), so that a run reaching it under another
        name (a hard link) is refused; call it again after the file was replaced. Nothing is
        locked while the file does not exist (nor on Windows, where such a lock would block
        the writes)."""
        if sys.platform == "win32":  # pragma: no cover - msvcrt locks are mandatory
            return
        self._release_file()
        try:
            fd = os.open(self.real, os.O_RDONLY)
        except FileNotFoundError:
            return
        if not _try_lock(fd):
            os.close(fd)
            raise ResultsLocked(self.results, None, other_name=True)
        self._file_fd = fd

    def _release_file(self) -> None:
        fd, self._file_fd = self._file_fd, None
        if fd is not None:
            _unlock(fd)
            os.close(fd)

    def release(self) -> None:
        """Free the lock and remove the lock file (nothing happens when not held)."""
        self._release_file()
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Removed while still locked, so no other process can lock the old file after us.
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)
        _unlock(fd)
        os.close(fd)

    def __enter__(self) -> ResultsLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def _read_holder(path: Path) -> dict[str, Any] | None:
    try:
        holder = json.loads(path.read_bytes() or b"null")
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
