"""The sha256 of a file, read in blocks (a file of any size in bounded memory); only a regular
file is read (:mod:`cigeval._regular_file`), so a FIFO or a device is an OSError, never a
read that waits or never ends."""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

from cigeval._regular_file import MAX_IMAGE_BYTES, FileTooLargeError, check_regular, open_regular

_BLOCK = 1 << 20


def file_sha256(path: Path, max_bytes: int | None = None) -> str:
    """The hex sha256 of the regular file at ``path``; OSError when it cannot be read, is no
    regular file or holds more than ``max_bytes`` bytes (when given)."""
    digest = hashlib.sha256()
    read = 0
    with open_regular(path, max_bytes) as handle:
        while block := handle.read(_BLOCK):
            read += len(block)
            if max_bytes is not None and read > max_bytes:  # grown since it was opened
                raise FileTooLargeError(errno.EFBIG, "file too large", str(path))
            digest.update(block)
    return digest.hexdigest()


#: (device, inode) -> (the file's size and times when hashed, its sha256), for
#: :func:`known_file_sha256`.
_KNOWN: dict[tuple[int, int], tuple[tuple[int, int, int], str]] = {}
_KNOWN_MOST = 1 << 16


def known_file_sha256(path: Path, max_bytes: int | None = MAX_IMAGE_BYTES) -> str:
    """:func:`file_sha256`, remembered in this process while the file (by device and inode,
    whatever path names it) keeps the size and times it had when hashed: a run needs an image
    file's hash at two steps (is its record current, may its answers be replayed) and reads
    the file once for both. An image file: a regular file of at most ``max_bytes`` bytes."""
    stat = path.stat()
    check_regular(path, max_bytes)
    seen = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    name = (stat.st_dev, stat.st_ino)
    known = _KNOWN.get(name)
    if known is not None and known[0] == seen:
        return known[1]
    digest = file_sha256(path, max_bytes)
    if len(_KNOWN) >= _KNOWN_MOST:
        _KNOWN.clear()
    _KNOWN[name] = (seen, digest)
    return digest
