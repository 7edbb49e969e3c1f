"""Input files are regular files of bounded size, checked before a byte of them is read.

A path read as an image, a samples file, a prompts file or a cache may name something that is
no file at all: a FIFO (reading it waits for a writer, forever), ``/dev/zero`` (endless), a
terminal, a folder. Opening it the usual way may already block (a FIFO without a writer), so
the file is opened without waiting (``O_NONBLOCK``), checked by what the open descriptor is
(``fstat``: no race between a check and the read), and read only when it is a regular file no
larger than the limit given; a file that grows past the limit while it is read is refused too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

#: The default limit of an image file's size: 512 MiB (more than an uncompressed 16-bit RGBA
#: image of 8192 x 8192 pixels needs). ``--max-image-bytes`` sets another.
MAX_IMAGE_BYTES = 512 * 1024 * 1024

#: The limit of a text file read whole: a prompt template, a tasks file, a source file of the
#: official code (16 MiB, far more than any of them needs).
MAX_TEXT_FILE_BYTES = 16 * 1024 * 1024

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class NotRegularFileError(OSError):
    """The path names a FIFO, a device, a socket or a folder, not a regular file."""


class FileTooLargeError(OSError):
    """The file holds more bytes than the limit of what it is read as."""


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _checked(status: os.stat_result, path: Path, max_bytes: int | None) -> int:
    if not stat.S_ISREG(status.st_mode):
        kind = kind_of(status.st_mode)
        raise NotRegularFileError(errno.EINVAL, f"{kind}, not a regular file", str(path))
    if max_bytes is not None and status.st_size > max_bytes:
        message = f"file too large ({status.st_size} bytes, limit {max_bytes} bytes)"
        raise FileTooLargeError(errno.EFBIG, message, str(path))
    return status.st_size


def check_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> int:
    """The size of the regular file at ``path`` (links followed); :class:`NotRegularFileError`
    for anything else, :class:`FileTooLargeError` above ``max_bytes``, OSError when it cannot
    be looked at. Nothing is opened."""
    return _checked(os.stat(path), Path(path), max_bytes)


def open_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary, once it is known to be a regular file of at most
    ``max_bytes`` bytes (see :func:`check_regular` for the errors). Opening never blocks."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY)
    try:
        _checked(os.fstat(fd), Path(path), max_bytes)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (:func:`open_regular`), never more than
    ``max_bytes``: a file grown past it since it was opened is :class:`FileTooLargeError`."""
    with open_regular(path, max_bytes) as handle:
        if max_bytes is None:
            return handle.read()
        data = read_capped(handle, max_bytes)
    if len(data) > max_bytes:
        message = f"file too large (more than the limit of {max_bytes} bytes)"
        raise FileTooLargeError(errno.EFBIG, message, str(path))
    return data


def read_capped(handle: BinaryIO, max_bytes: int) -> bytes:
    """The rest of the file ``handle`` reads, up to ``max_bytes + 1`` bytes (one more than the
    limit tells a file that grew past it). Reads the size the file has now, plus one byte,
    before anything more: ``read(n)`` makes a buffer of ``n`` bytes first, so asking for the
    limit at once set aside 512 MiB per image read (address space, not resident memory: a
    system that does not overcommit refused it, and memory profilers counted it)."""
    left = os.fstat(handle.fileno()).st_size - handle.tell()
    wanted = min(max_bytes, max(left, 0)) + 1
    data = handle.read(wanted)
    if len(data) == wanted and wanted <= max_bytes:  # grown since: read on, to the limit
        data += handle.read(max_bytes + 1 - wanted)
    return data
