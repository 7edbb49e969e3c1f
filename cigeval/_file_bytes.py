"""The bytes of an image file, held while a sample needs them and read again, checked, after.

Under ``--image-encoding jpeg75`` a sample's image files are read once (checked, hashed,
encoded) and then wait for the judge, perhaps for seconds. Holding every file's bytes during
that wait costs more memory than the JPEG encodings that are actually sent. A
:class:`ReloadableFileBytes` can let its bytes go (:meth:`~ReloadableFileBytes.release`) and
reads the file again when they are needed once more (a tool decoding the pixels). The file is
checked against the sha256 of the bytes it first gave: a file changed on disk since is refused
(:class:`FileChangedError`), never decoded in place of what was checked and encoded.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cigeval._regular_file import FileTooLargeError, read_regular


class FileChangedError(OSError):
    """An image file's bytes differ from those read when its sample was loaded."""


class ReloadableFileBytes:
    """``path``'s bytes (``data``, as read from it, whose sha256 is ``sha256``)."""

    def __init__(self, path: str | Path, data: bytes, sha256: str) -> None:
        self.path = Path(path)
        self.sha256 = sha256
        self.size = len(data)
        self._data: bytes | None = data

    def data(self) -> bytes:
        """The file's bytes; once released, read again (and checked) for this use only."""
        held = self._data
        if held is not None:
            return held
        try:
            # a regular file no larger than it was: a FIFO or device put there is never read
            data = read_regular(self.path, self.size)
        except FileTooLargeError:
            data = b""  # grown since: changed (told below)
        except OSError as exc:
            raise FileChangedError(
                f"the file cannot be read again since it was read for this sample: "
                f"{self.path} ({exc})"
            ) from None
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise FileChangedError(
                f"the file changed on disk after it was read for this sample: {self.path}"
            )
        return data

    def release(self) -> None:
        """Let the bytes go: each later use reads the file again."""
        self._data = None

    @property
    def held(self) -> bool:
        """Whether the bytes are in memory now."""
        return self._data is not None
