"""The sha256 of a file, read in blocks (a file of any size in bounded memory)."""

from __future__ import annotations

import hashlib
from pathlib import Path

_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    """The hex sha256 of the file at ``path``; OSError when it cannot be read."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


#: (device, inode) -> (the file's size and times when hashed, its sha256), for
#: :func:`known_file_sha256`.
_KNOWN: dict[tuple[int, int], tuple[tuple[int, int, int], str]] = {}
_KNOWN_MOST = 1 << 16


def known_file_sha256(path: Path) -> str:
    """:func:`file_sha256`, remembered in this process while the file (by device and inode,
    whatever path names it) keeps the size and times it had when hashed: a run needs an image
    file's hash at two steps (is its record current, may its answers be replayed) and reads
    the file once for both."""
    stat = path.stat()
    seen = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    name = (stat.st_dev, stat.st_ino)
    known = _KNOWN.get(name)
    if known is not None and known[0] == seen:
        return known[1]
    digest = file_sha256(path)
    if len(_KNOWN) >= _KNOWN_MOST:
        _KNOWN.clear()
    _KNOWN[name] = (seen, digest)
    return digest
