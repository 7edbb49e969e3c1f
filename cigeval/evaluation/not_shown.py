"""The images of a sample the judge is never sent (the edit mask of mask-guided editing), as a
record names them: by role and sha256 in ``images_not_shown``, with where each can be read in
``image_files`` (its own file, or the run's image store for one given as bytes), so a report
can show them, marked as not shown to the judge."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from cigeval.image_store import ImageStore
from cigeval.images import EncodedImage, LoadedImage, image_path
from cigeval.sample import Sample

#: The roles no rubric or tool sends to the judge (docs/what-the-judge-sees.md#image-roles).
NOT_SHOWN_ROLES = ("mask",)

_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))


def images_not_shown(images: Mapping[str, LoadedImage]) -> dict[str, str]:
    """Role -> sha256 (of the file or bytes read) of the loaded images never sent."""
    return {
        role: image.sha256
        for role, image in images.items()
        if role in NOT_SHOWN_ROLES and image.sha256 is not None
    }


def not_shown_files(
    sample: Sample, not_shown: Mapping[str, str], store: ImageStore | None = None
) -> dict[str, str]:
    """sha256 -> where each image of ``not_shown`` can be read: the absolute path of the file
    ``sample`` names, or for one it gives as bytes, their copy in ``store`` (none without a
    store, nor for one given as pixels)."""
    given = sample.images.provided()
    files: dict[str, str] = {}
    for role, sha in not_shown.items():
        value = given.get(role)
        if isinstance(value, str | Path):
            files[sha] = str(image_path(value, sample.base_dir).resolve())
        elif isinstance(value, bytes) and store is not None and _sha256(value) == sha:
            mime = next((m for magic, m in _MAGIC if value.startswith(magic)), "")
            files[sha] = str(store.put(EncodedImage(value, mime, sha, 0, 0)).resolve())
    return files


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
