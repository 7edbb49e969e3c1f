"""The samples file of a run, read as one snapshot: a file rewritten during the run stops it.

A pipeline may regenerate the samples file while a run reads it (lazily, line by line): the
run would then judge some old lines and some new ones, and miss others. The run records the
file's size, modification time and sha256 when it starts (they go into each record's
provenance), checks before handing on each line that the file is still the one it hashed
(same inode, size, modification and change times), and otherwise stops reading: the samples
in flight, all read from the first version, finish and are written, then the run ends with
:class:`SamplesChanged` naming the file (``cigeval evaluate`` exits 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cigeval._digest import file_sha256
from cigeval.errors import InputError
from cigeval.sample import SampleLine, iter_samples_file
from cigeval.terminal import safe_text


class SamplesChanged(InputError):
    """The samples file changed while the run read it; the message names it and says what
    the run kept."""


def _identity(status: os.stat_result) -> tuple[int, int, int, int, int]:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


class SamplesSnapshot:
    """The samples file ``path`` as the run found it: :meth:`lines` yields its lines while it
    stays that file, and :attr:`changed` says why it stopped when it did not."""

    def __init__(self, path: Path) -> None:
        self.path = path
        before = os.stat(path)
        self.sha256 = file_sha256(path)
        self._identity = _identity(before)
        self.size = before.st_size
        self.mtime = before.st_mtime
        #: Why reading stopped early (the file changed), or None.
        self.changed: str | None = None
        if self._differs():
            raise self.error()

    def _differs(self) -> bool:
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            self.changed = "it was removed"
            return True
        if _identity(now) == self._identity:
            return False
        self.changed = (
            "it was replaced by another file"
            if now.st_ino != self._identity[1]
            else f"it was rewritten ({self.size} -> {now.st_size} bytes)"
        )
        return True

    def provenance(self) -> dict[str, Any]:
        """What each record of the run says about the samples file it came from."""
        modified = datetime.fromtimestamp(self.mtime, tz=UTC).isoformat(timespec="seconds")
        return {
            "path": str(self.path),
            "size": self.size,
            "modified": modified,
            "sha256": self.sha256,
        }

    def lines(self) -> Iterator[SampleLine]:
        """The file's lines (:func:`~cigeval.sample.iter_samples_file`), each checked to come
        from the snapshot; reading stops at the first sign of a change (see :attr:`changed`)."""
        for line in iter_samples_file(self.path):
            if self._differs():
                return
            yield line
        self._differs()  # a line appended after the last one read is a change too

    def error(self) -> SamplesChanged:
        """The error that ends a run whose samples file changed."""
        return SamplesChanged(
            f"the samples file {safe_text(self.path)} changed while the run read it "
            f"({self.changed}); the run stopped: the records written came from the file as "
            "it was at the start. Rerun once the file is final: the samples already judged "
            "are kept when their ids remain"
        )
