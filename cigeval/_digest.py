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
