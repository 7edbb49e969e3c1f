"""Thumbnails for a report: each image read once, downscaled with Pillow, kept by its sha256.

Records name their images by hash (``input_images``, ``tool_image_ids``) and say where each
can be read (``image_files``: sha256 -> path). A report embeds one small JPEG or PNG per
distinct hash as a data URI, whatever number of samples show it. An image that cannot be
found or read is listed (sample, role, why) and shown as missing, never an error.
"""

from __future__ import annotations

import base64
import io
import multiprocessing
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

#: Default longest side of a report thumbnail, in pixels.
THUMBNAIL_SIDE = 192
#: From this many image files on, thumbnails are made by worker processes, one per core
#: (decoding, scaling and encoding hold the GIL part of the time); fewer are made by threads,
#: since starting the processes would cost more than it saves.
PROCESSES_FROM = 256
#: Image files per task sent to a worker process.
_BATCH = 64


@dataclass(frozen=True)
class MissingImage:
    """An image a record names that the report could not show."""

    sample_id: str
    role: str
    sha256: str
    reason: str

    def __str__(self) -> str:
        return f"sample {self.sample_id!r}, image {self.role} ({self.sha256[:12]}): {self.reason}"


def thumbnail_data_uri(image: Image.Image, side: int = THUMBNAIL_SIDE, *, own: bool = False) -> str:
    """A data URI of ``image`` downscaled to fit ``side``: PNG when it has few colours (masks,
    flat drawings stay sharp), JPEG (quality 75) for photographs. ``own``: the image may be
    scaled in place (it was opened for this), else a copy is."""
    copy = image if own else image.copy()
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
        return thumbnail_data_uri(image, side, own=True)


def _read_thumbnails(paths: list[Path], side: int) -> list[tuple[str, str | None]]:
    """(data URI, None) or ("", why it cannot be read) for each file: a worker's task."""
    made: list[tuple[str, str | None]] = []
    for path in paths:
        try:
            made.append((_read_thumbnail(path, side), None))
        except Exception as exc:  # any unreadable image is listed, never fatal
            made.append(("", _unreadable(exc)))
    return made


def _unreadable(exc: Exception) -> str:
    return f"cannot be read ({type(exc).__name__}: {str(exc)[:120]})"


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
        """Make the thumbnail of every requested image; list those that cannot be shown.

        Images given in memory and a few files are done by ``threads`` threads; from
        :data:`PROCESSES_FROM` files on, by one worker process per core (threads again if
        processes cannot be started).
        """
        files: list[tuple[str, Path]] = []
        others: list[tuple[str, Any, str | None]] = []  # (sha, image, why not shown)
        for sha, (path, image, _) in self._wanted.items():
            if sha in self.thumbnails:
                continue
            if image is not None:
                others.append((sha, image, None))
            elif path is None:
                others.append((sha, None, "the record names no file for it"))
            elif not path.is_file():
                others.append((sha, None, f"file not found: {path}"))
            else:
                files.append((sha, path))

        def in_memory(item: tuple[str, Any, str | None]) -> None:
            sha, image, reason = item
            if image is not None:
                try:
                    self.thumbnails[sha] = thumbnail_data_uri(image, self.side)
                    return
                except Exception as exc:
                    reason = _unreadable(exc)
            self._missing(sha, reason or "")

        def from_files(batch: list[tuple[str, Path]]) -> None:
            made = _read_thumbnails([path for _, path in batch], self.side)
            self._store(batch, made)

        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            list(pool.map(in_memory, others))
            use_processes = (os.cpu_count() or 1) > 1 and len(files) >= PROCESSES_FROM
            if use_processes and self._in_processes(files):
                files = []
            elif use_processes:  # processes could not run: threads make what is left
                done = {m.sha256 for m in self.missing} | set(self.thumbnails)
                files = [(sha, path) for sha, path in files if sha not in done]
            batches = [files[i : i + _BATCH // 8] for i in range(0, len(files), _BATCH // 8)]
            list(pool.map(from_files, batches))
        self.missing.sort(key=lambda m: (m.sample_id, m.role))

    def _in_processes(self, files: list[tuple[str, Path]]) -> bool:
        """Thumbnails of ``files`` made by worker processes; False when they cannot run."""
        batches = [files[i : i + _BATCH] for i in range(0, len(files), _BATCH)]
        workers = min(os.cpu_count() or 1, 8)
        try:
            context = multiprocessing.get_context("spawn")  # no fork of a threaded process
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                jobs = [[path for _, path in batch] for batch in batches]
                results = pool.map(_read_thumbnails, jobs, [self.side] * len(jobs))
                for batch, made in zip(batches, results, strict=True):
                    self._store(batch, made)
        except (OSError, BrokenProcessPool):
            return False
        return True

    def _store(self, batch: list[tuple[str, Path]], made: list[tuple[str, str | None]]) -> None:
        for (sha, _), (uri, reason) in zip(batch, made, strict=True):
            if reason is None:
                self.thumbnails[sha] = uri
            else:
                self._missing(sha, reason)

    def _missing(self, sha: str, reason: str) -> None:
        users = self._wanted[sha][2]
        self.missing.extend(MissingImage(s, r, sha, reason) for s, r in users)

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
