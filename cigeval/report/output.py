"""Where a report page is written: never over one of its inputs, never half, never through a link.

``cigeval report R -o R`` (a typo, a shell history) must not turn a results file into HTML,
and ``-o samples.jsonl`` must not replace the samples. The page's path is refused when it is
the same file as a results file read (symlinks resolved, hard links by inode) or a samples
file its records name, when it holds JSON lines (whatever wrote them) or anything else but an
HTML page (an image the records show, a document), when a run holds its lock, or when it is
no regular file (a folder, a FIFO, a device). The page is written to a
temporary file beside it and renamed over the path at the end: a reader never sees half a
page, a failed write leaves the old file as it was, and a link planted at the path is
replaced, its target untouched. The checks run again just before the rename.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from cigeval.errors import InputError, ReportWriteError
from cigeval.terminal import safe_text

#: How much of an existing file is read to tell whether it holds JSON lines.
_HEAD_BYTES = 64 * 1024
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _head(path: Path) -> bytes | None:
    """The first bytes of the file at ``path`` (enough to tell what it holds), read without
    following the path if it is no regular file; None when it cannot be read."""
    from cigeval._regular_file import open_regular

    try:
        with open_regular(path) as handle:
            return handle.read(_HEAD_BYTES)
    except OSError:
        return None


def _reads_as_jsonl(head: bytes) -> bool:
    """Whether the first non-blank line of a file starting with ``head`` is a JSON object or
    array (results, samples, any JSON lines)."""
    for line in head.splitlines():
        text = line.strip().lstrip(b"\xef\xbb\xbf")
        if not text:
            continue
        if text[:1] not in (b"{", b"["):
            return False
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return len(line) == len(head)  # a first line longer than the head read
        return True
    return False


def _page_or_empty(path: Path, head: bytes | None) -> bool:
    """Whether the file at ``path``, starting with ``head``, may be replaced by a page: an
    HTML page (an earlier report), an empty file, or a link (the link is replaced, its target
    left alone)."""
    if os.path.islink(path):
        return True
    if head is None:
        return True  # what cannot be read is refused or fails when written, in its words
    text = head.lstrip(b"\xef\xbb\xbf").lstrip().lower()
    return not text or text.startswith((b"<!doctype html", b"<html"))


def refuse_output_over_inputs(out: Path, inputs: Iterable[tuple[str, Path]]) -> None:
    """InputError when the page's path ``out`` is one of ``inputs`` (what it is, its path),
    holds JSON lines, is locked by a run or is not a regular file; nothing is written."""
    from cigeval._regular_file import kind_of
    from cigeval.results.lock import lock_path
    from cigeval.runs.guards import same_file

    shown = safe_text(out)
    for kind, source in inputs:
        if same_file(out, source):
            raise InputError(
                f"-o {shown} would overwrite the {kind} {safe_text(source)}, which the report "
                "reads; choose another output path (nothing was written)"
            )
    try:
        status = out.stat()
    except OSError:
        status = None
    if status is not None and not os.path.isfile(out):
        raise InputError(f"-o {shown} is {kind_of(status.st_mode)}, not a file for the page")
    if lock_path(out).exists():
        raise InputError(
            f"-o {shown} is the results file of a run that is writing it (its lock "
            f"{safe_text(lock_path(out))} exists); choose another output path"
        )
    head = _head(out) if status is not None else None
    if head is not None and _reads_as_jsonl(head):
        raise InputError(
            f"-o {shown} holds JSON lines (results or samples?), not a report page; it was "
            "left as it was: choose another output path or remove it first"
        )
    if status is not None and not _page_or_empty(out, head):
        raise InputError(
            f"-o {shown} holds something other than an HTML page (an image the records "
            "show?); it was left as it was: choose another output path or remove it first"
        )


def write_page(out: Path, parts: Iterable[bytes], inputs: Iterable[tuple[str, Path]]) -> Path:
    """Write ``parts`` to ``out`` through a temporary file renamed over it (see the module);
    InputError when ``out`` is refused, :class:`~cigeval.errors.ReportWriteError` when
    writing fails."""
    inputs = list(inputs)
    refuse_output_over_inputs(out, inputs)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        temporary = out.parent / f".{out.name}.{secrets.token_hex(6)}.tmp"
        # the mode a new file gets (0o666 less the umask), never following a link
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o666)
    except OSError as exc:
        raise ReportWriteError(_cannot_write(out, exc)) from None
    try:
        with os.fdopen(handle, "wb") as page:
            for part in parts:
                page.write(part)
        refuse_output_over_inputs(out, inputs)  # again: a run may have started meanwhile
        os.replace(temporary, out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise ReportWriteError(_cannot_write(out, exc)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return out


def _cannot_write(out: Path, exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    where = f" ({safe_text(exc.filename)})" if exc.filename else ""
    return f"cannot write the report {safe_text(out)}: {reason}{where}; nothing was replaced"
