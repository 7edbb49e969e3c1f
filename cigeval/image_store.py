"""Where the images a judge saw can be found again: input files, or a content-addressed store.

A record lists every image sent to the judge by its sha256 (``image_files``: sha256 -> path).
An input image sent byte for byte is found at its own file; any other image (a highlighted
tool output, a converted input, an image given in memory) is written once to an
:class:`ImageStore` folder, named by its hash, so reports and fine-tuning exports can show
exactly what the judge was shown.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from cigeval.errors import ResultsWriteError
from cigeval.images import EncodedImage
from cigeval.terminal import safe_text

_SUFFIX = {"image/png": ".png", "image/jpeg": ".jpg"}


class ImageStore:
    """A folder of images named by their content hash: ``<dir>/<sha[:2]>/<sha>.<ext>``.

    Writing is atomic and idempotent: an image already stored is not written again, and a
    reader never sees half a file. Nothing is written through a symbolic link: a link planted
    at the folder or at one of its sub-folders is refused, and one planted at an image's name
    is replaced by the image. A write that fails (a full disk, a folder that cannot be
    written) raises :class:`~cigeval.errors.ResultsWriteError`, whose one line names the
    folder; a run stops on it (exit status 2).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()

    def __repr__(self) -> str:
        return f"ImageStore({str(self.directory)!r})"

    def path_for(self, sha256: str, mime: str = "image/png") -> Path:
        """Where the image with this hash is (or would be) stored."""
        return self.directory / sha256[:2] / f"{sha256}{_SUFFIX.get(mime, '.bin')}"

    def put(self, image: EncodedImage) -> Path:
        """Store ``image`` (once) and return its path."""
        path = self.path_for(image.sha256, image.mime)
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                return path  # stored already (a link at its name is no stored image)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._failed(exc) from None
        try:
            for folder in (self.directory, path.parent):
                if not os.path.islink(folder):
                    folder.mkdir(parents=True, exist_ok=True)
                if os.path.islink(folder):  # planted before, or while it was made
                    raise ResultsWriteError(refused_link(folder, "the image folder"))
            handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        except OSError as exc:
            raise self._failed(exc) from None
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(image.data)
            os.replace(temporary, path)  # a link at that name is replaced, never followed
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            if isinstance(exc, OSError):
                raise self._failed(exc) from None
            raise
        return path

    def _failed(self, exc: OSError) -> ResultsWriteError:
        reason = exc.strerror or str(exc)
        return ResultsWriteError(
            f"cannot write the images shown to the judge to {safe_text(self.directory)}: "
            f"{reason}; the run stopped (free space or fix the folder, then rerun to resume)"
        )


def refused_link(path: Path, what: str) -> str:
    """The message refusing a symbolic link planted at ``path`` (``what`` it stands for)."""
    return (
        f"{what} {safe_text(path)} is a symbolic link (planted by someone else?); cigeval "
        "does not write through it and leaves its target alone: remove the link, or give the "
        "folder it points to, then run again"
    )


def image_location(image: EncodedImage, store: ImageStore | None) -> str | None:
    """Where ``image`` can be read back: its source file, else the store (None without one)."""
    if image.source is not None:
        return image.source
    if store is not None:
        return str(store.put(image).resolve())
    return None
