"""Thumbnails for a report: each image read once, downscaled with Pillow, kept by its sha256.

Records name their images by hash (``input_images``, ``tool_image_ids``) and say where each
can be read (``image_files``: sha256 -> path). A report embeds one small JPEG or PNG per
distinct hash as a data URI, whatever number of samples show it. An image that cannot be
found or read is listed (sample, role, why) and shown as missing, never an error.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

#: Default longest side of a report thumbnail, in pixels.
THUMBNAIL_SIDE = 192


@dataclass(frozen=True)
class MissingImage:
    """An image a record names that the report could not show."""

    sample_id: str
    role: str
    sha256: str
    reason: str

    def __str__(self) -> str:
        return f"sample {self.sample_id!r}, image {self.role} ({self.sha256[:12]}): {self.reason}"


def thumbnail_data_uri(image: Image.Image, side: int = THUMBNAIL_SIDE) -> str:
    """A data URI of ``image`` downscaled to fit ``side``: PNG when it has few colours (masks,
    flat drawings stay sharp), JPEG (quality 75) for photographs."""
    copy = image.copy()
    copy.thumbnail((side, side))
    if copy.mode not in ("RGB", "L"):
        copy = copy.convert("RGB")
    buffer = io.BytesIO()
    if copy.getcolors(256) is not None:
        copy.save(buffer, format="PNG")
        mime = "image/png"
    else:
        copy.save(buffer, format="JPEG", quality=75)
        mime = "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def _read_thumbnail(path: Path, side: int) -> str:
    with Image.open(path) as image:
        image.draft("RGB", (side, side))  # JPEG: decode at a reduced size, much faster
        image.load()
        return thumbnail_data_uri(image, side)


class ImageCatalog:
    """The thumbnails of a report by sha256, and the images that could not be shown.

    ``request`` notes an image a card shows; :meth:`resolve` reads every requested image once
    (a few threads: Pillow decodes without the GIL). Relative paths are tried against the
    results file's folder.
    """

    def __init__(self, side: int = THUMBNAIL_SIDE) -> None:
        self.side = side
        self.thumbnails: dict[str, str] = {}
        self.missing: list[MissingImage] = []
        self._wanted: dict[str, tuple[Path | None, Any, list[tuple[str, str]]]] = {}

    def request(
        self,
        sha256: str,
        *,
        sample_id: str,
        role: str,
        files: dict[str, Any],
        base_dir: Path | None,
        in_memory: dict[str, Any] | None = None,
    ) -> None:
        """Note that sample ``sample_id`` shows image ``sha256`` as ``role``."""
        entry = self._wanted.get(sha256)
        if entry is None:
            image = (in_memory or {}).get(sha256)
            entry = (_locate(files.get(sha256), base_dir), image, [])
            self._wanted[sha256] = entry
        elif entry[0] is None and entry[1] is None:
            located = _locate(files.get(sha256), base_dir)
            image = (in_memory or {}).get(sha256)
            if located is not None or image is not None:
                entry = (located, image, entry[2])
                self._wanted[sha256] = entry
        entry[2].append((sample_id, role))

    def resolve(self, threads: int = 4) -> None:
        """Make the thumbnail of every requested image; list those that cannot be shown."""
        jobs = [(sha, entry) for sha, entry in self._wanted.items() if sha not in self.thumbnails]

        def one(item: tuple[str, tuple[Path | None, Any, list[tuple[str, str]]]]) -> None:
            sha, (path, image, users) = item
            try:
                if image is not None:
                    self.thumbnails[sha] = thumbnail_data_uri(image, self.side)
                    return
                if path is None:
                    reason = "the record names no file for it"
                elif not path.is_file():
                    reason = f"file not found: {path}"
                else:
                    self.thumbnails[sha] = _read_thumbnail(path, self.side)
                    return
            except Exception as exc:  # any unreadable image is listed, never fatal
                reason = f"cannot be read ({type(exc).__name__}: {str(exc)[:120]})"
            self.missing.extend(MissingImage(s, r, sha, reason) for s, r in users)

        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            list(pool.map(one, jobs))
        self.missing.sort(key=lambda m: (m.sample_id, m.role))

    def total_bytes(self) -> int:
        """Characters of all thumbnails' data URIs (their share of the page)."""
        return sum(len(uri) for uri in self.thumbnails.values())


def _locate(location: Any, base_dir: Path | None) -> Path | None:
    if not isinstance(location, str) or not location:
        return None
    path = Path(location).expanduser()
    if not path.is_absolute() and base_dir is not None and not path.exists():
        path = base_dir / path
    return path


def requested_hashes(record: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """(role, sha256) of every image a record's card shows: inputs, then tool images."""
    for role, sha in (record.get("input_images") or {}).items():
        if isinstance(sha, str):
            yield str(role), sha
    for sub in record.get("sub_scores") or []:
        if not isinstance(sub, dict):
            continue
        for role, sha in (sub.get("tool_image_ids") or {}).items():
            if isinstance(sha, str):
                yield f"{sub.get('question_id', '?')}: {role}", sha
