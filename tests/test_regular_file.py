"""A file read up to a limit asks for what it holds, not for the limit: ``read(n)`` makes a
buffer of ``n`` bytes first, so each image read used to set aside 512 MiB of address space
(refused where the system does not overcommit). A file grown past the limit since it was
opened is still told apart."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import BinaryIO

import pytest

import cigeval._regular_file as regular_file
from cigeval._regular_file import FileTooLargeError, read_capped, read_regular

LIMIT = 512 * 1024 * 1024


class Counting:
    """A file handle that notes the size of every read asked of it."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.asked: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.asked.append(size)
        return self.handle.read(size)

    def fileno(self) -> int:
        return self.handle.fileno()

    def tell(self) -> int:
        return self.handle.tell()


def test_a_read_asks_for_the_files_size_not_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"x" * 1000)
    with path.open("rb") as handle:
        handle.seek(10)
        counting = Counting(handle)
        data = read_capped(counting, LIMIT)  # type: ignore[arg-type]
    assert data == b"x" * 990 and counting.asked == [991]
    assert read_regular(path, LIMIT) == b"x" * 1000


def test_a_file_grown_since_it_was_sized_is_read_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "image.png"
    for grown, limit, expected in ((50, 1000, 150), (5000, 1000, 1001)):
        path.write_bytes(b"x" * (100 + grown))
        # sized at 100 bytes, as before the file grew
        monkeypatch.setattr(regular_file.os, "fstat", lambda fd: SimpleNamespace(st_size=100))
        with path.open("rb") as handle:
            counting = Counting(handle)
            data = read_capped(counting, limit)  # type: ignore[arg-type]
        monkeypatch.undo()
        assert len(data) == expected and counting.asked[0] == 101
    with pytest.raises(FileTooLargeError):
        read_regular(path, 1000)
