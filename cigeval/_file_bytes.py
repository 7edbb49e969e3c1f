"""The bytes of an image file, held while a sample needs them and read again, checked, after.

Under ``--image-encoding jpeg75`` a sample's image files are read once (checked, hashed,
encoded) and then wait for the judge, perhaps for seconds. Holding every file's bytes during
that wait costs more memory than the JPEG encodings that are actually sent. A
:class:`ReloadableFileBytes` can let its bytes go (:meth:`~ReloadableFileBytes.release`) and
reads the file again when they are needed once more (a tool decoding the pixels). The file is
checked against the sha256 of the bytes it first gave: a file changed on disk since is refused
(:class:`FileChangedError`), never decoded in place of what was checked and encoded.

It is also the file object Pillow opens the image from, so a lazily decoded image reads its
pixel data through it.
"""

from __future__ import annotations

import hashlib
import io
import threading
from pathlib import Path


class FileChangedError(OSError):
    """An image file's bytes differ from those read when its sample was loaded."""


class ReloadableFileBytes(io.RawIOBase):
    """A seekable, readable view of ``path``'s bytes (initially ``data``, as read from it)."""

    def __init__(self, path: str | Path, data: bytes) -> None:
        super().__init__()
        self.path = Path(path)
        self._data: bytes | None = data
        self._sha256: str | None = None
        self._position = 0
        self._lock = threading.Lock()
        self.released_once = False

    def data(self) -> bytes:
        """The file's bytes, read again (and checked) if they were released."""
        with self._lock:
            if self._data is None:
                try:
                    data = self.path.read_bytes()
                except OSError as exc:
                    raise FileChangedError(
                        f"the file cannot be read again since it was read for this sample: "
                        f"{self.path} ({exc})"
                    ) from None
                if hashlib.sha256(data).hexdigest() != self._sha256:
                    raise FileChangedError(
                        f"the file changed on disk after it was read for this sample: {self.path}"
                    )
                self._data = data
            return self._data

    def sha256(self) -> str:
        """The sha256 (hex) of the bytes first read."""
        if self._sha256 is None:  # the bytes are held: only a released file knows its sha256
            digest = hashlib.sha256(self.data()).hexdigest()
            with self._lock:
                self._sha256 = self._sha256 or digest
        return self._sha256

    def release(self, sha256: str | None = None) -> None:
        """Let the bytes go until they are needed again. ``sha256``: theirs, when the caller
        computed it already (it is trusted, not checked)."""
        if sha256 is not None:
            with self._lock:
                self._sha256 = self._sha256 or sha256
        self.sha256()
        with self._lock:
            self._data = None
            self.released_once = True

    @property
    def held(self) -> bool:
        """Whether the bytes are in memory now."""
        return self._data is not None

    # io.RawIOBase, for Pillow
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._position + offset
        else:
            position = len(self.data()) + offset
        if position < 0:
            raise ValueError(f"negative seek position {position}")
        self._position = position
        return position

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.data()
        chunk = data[self._position : self._position + len(buffer)]
        buffer[: len(chunk)] = chunk
        self._position += len(chunk)
        return len(chunk)

    def read(self, size: int = -1) -> bytes:
        data = self.data()
        end = len(data) if size is None or size < 0 else self._position + size
        chunk = data[self._position : end]
        self._position += len(chunk)
        return chunk
