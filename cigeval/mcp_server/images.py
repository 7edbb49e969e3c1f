"""The images an MCP client names: a data URI, or a file under the server's image root.

A client (a coding agent, an image generator) names each image either by its data
(``data:image/png;base64,...``) or by a path, relative to the root or absolute. A path is
followed to the file it ends at (links resolved) and refused unless that file lies under the
root: ``..``, an absolute path elsewhere and a link pointing out of the root are all refused,
as are what is not a regular file (a FIFO, a device, a folder: told by the open descriptor, the
open never waiting) and a file over the size limit. The bytes are read here, once, the file
opened by its resolved path with a link in its place refused (``O_NOFOLLOW``), and the judge
gets those bytes, never the path.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cigeval._regular_file import kind_of, read_capped
from cigeval.errors import InputError


@dataclass(frozen=True)
class ImageRoot:
    """The folder client paths may name, and the largest image accepted (bytes)."""

    folder: Path
    max_bytes: int

    def __post_init__(self) -> None:
        resolved = self.folder.expanduser().resolve()
        if not resolved.is_dir():
            raise InputError(f"the image root {self.folder} is not a folder")
        object.__setattr__(self, "folder", resolved)

    def read(self, reference: str, what: str) -> bytes:
        """The bytes of the image ``reference`` names (a data URI or a path under the root);
        an :class:`InputError` naming ``what`` (e.g. ``images.output``) and the problem."""
        if not isinstance(reference, str) or not reference:
            raise InputError(f"{what}: give a path under the image root or a data: URI")
        if reference.startswith("data:"):
            return self._data(reference, what)
        if "://" in reference:
            raise InputError(
                f"{what}: {reference[:80]!r} is a URL; give a path under the image root "
                f"({self.folder}) or the image as a data: URI"
            )
        return self._file(reference, what)

    def _data(self, uri: str, what: str) -> bytes:
        header, _, payload = uri.partition(",")
        if not header.startswith("data:image/") or not header.endswith(";base64"):
            raise InputError(f"{what}: a data URI must be data:image/<type>;base64,<data>")
        if len(payload) > self.max_bytes * 4 // 3 + 4:
            raise InputError(f"{what}: the image is over the limit of {self.max_bytes} bytes")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise InputError(f"{what}: the data URI's base64 is not valid") from None
        if not data:
            raise InputError(f"{what}: the data URI holds no data")
        return data

    def _file(self, given: str, what: str) -> bytes:
        path = Path(given).expanduser()
        if not path.is_absolute():
            path = self.folder / path
        try:
            resolved = path.resolve(strict=True)
        except FileNotFoundError:
            raise InputError(f"{what}: no such file: {given}") from None
        except (OSError, RuntimeError) as exc:  # a link loop, a name too long, no permission
            raise InputError(f"{what}: cannot follow {given}: {exc}") from None
        if not resolved.is_relative_to(self.folder):
            raise InputError(
                f"{what}: {given} is outside the image root {self.folder} (links followed); "
                "only files under the root may be named"
            )
        try:
            descriptor = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise InputError(f"{what}: cannot open {given}: {exc.strerror or exc}") from None
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"{what}: {given} is {kind_of(info.st_mode)}, not a regular file")
            if info.st_size > self.max_bytes:
                raise InputError(
                    f"{what}: {given} is {info.st_size} bytes, over the limit of "
                    f"{self.max_bytes} bytes"
                )
            with os.fdopen(descriptor, "rb", closefd=False) as file:
                data = read_capped(file, self.max_bytes)
        finally:
            os.close(descriptor)
        if len(data) > self.max_bytes:
            raise InputError(f"{what}: {given} grew over the limit of {self.max_bytes} bytes")
        if not data:
            raise InputError(f"{what}: {given} is an empty file")
        return data
