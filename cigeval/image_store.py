"""Where the images a judge saw can be found again: input files, or a content-addressed store.

A record lists every image sent to the judge by its sha256 (``image_files``: sha256 -> path).
An input image sent byte for byte is found at its own file; any other image (a highlighted
tool output, a converted input, an image given in memory) is written once to an
:class:`ImageStore` folder, named by its hash, so reports and fine-tuning exports can show
exactly what the judge was shown.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cigeval.images import EncodedImage

_SUFFIX = {"image/png": ".png", "image/jpeg": ".jpg"}


class ImageStore:
    """A folder of images named by their content hash: ``<dir>/<sha[:2]>/<sha>.<ext>``.

    Writing is atomic and idempotent: an image already stored is not written again, and a
    reader never sees half a file.
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
        if path.exists():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(image.data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path


def image_location(image: EncodedImage, store: ImageStore | None) -> str | None:
    """Where ``image`` can be read back: its source file, else the store (None without one)."""
    if image.source is not None:
        return image.source
    if store is not None:
        return str(store.put(image).resolve())
    return None
