"""Thumbnails for a report: each image read once (decoded by Pillow, the last step of its
downscale by OpenCV), kept by its sha256.

Records name their images by hash (``input_images``, ``tool_image_ids``) and say where each
can be read (``image_files``: sha256 -> path). A report embeds one small JPEG or PNG per
distinct hash as a data URI, whatever number of samples show it. An image that cannot be
found or read is listed (sample, role, why) and shown as missing, never an error.

Thumbnails of files are kept in a cache (one SQLite file, :class:`ThumbnailCache`) keyed by
the thumbnail settings and the sha256 of the file's bytes as read now, so a second report of
the same images decodes none of them. A row is trusted only once checked: it names the key it
was stored under (a row copied from another image names that image) and holds a PNG or JPEG
that decodes and fits the thumbnail size; any other row is made anew, never shown.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import multiprocessing
import os
import sqlite3
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps, UnidentifiedImageError

#: Default longest side of a report thumbnail, in pixels.
THUMBNAIL_SIDE = 192
#: How thumbnails are made (scaling, formats): part of the cache key, changed with the method.
THUMBNAIL_METHOD = "v3"
#: From this many image files to decode on, thumbnails are made by worker processes (one
#: per core); fewer are made by threads, since starting processes would cost more than it saves.
PROCESSES_FROM = 256
#: Image files per task sent to a worker process (small, so the workers end together).
_BATCH = 16
#: A report looks every file up in the thumbnail cache only when one of this many first is in.
_CACHE_PROBE = 16


@dataclass(frozen=True)
class MissingImage:
    """An image a record names that the report could not show."""

    sample_id: str
    role: str
    sha256: str
    reason: str

    def __str__(self) -> str:
        return f"sample {self.sample_id!r}, image {self.role} ({self.sha256[:12]}): {self.reason}"


def thumbnail_data_uri(
    image: Image.Image, side: int = THUMBNAIL_SIDE, *, mask: bool = False
) -> str:
    """A data URI of ``image`` downscaled to fit ``side``: PNG when it has few colours (masks,
    flat drawings stay sharp), JPEG (quality 75) for photographs. ``image`` is not changed.

    Its colours are those the judge is shown (:func:`cigeval.images.to_rgb`: transparency on
    white, high bit depths rescaled), or with ``mask`` an edit mask's black and white
    (:func:`cigeval.images.mask_to_rgb`)."""
    if mask:
        from cigeval.images import mask_to_rgb

        image = mask_to_rgb(image)
    small = _downscaled(image, side)
    if small.mode not in ("RGB", "L"):
        from cigeval.images import to_rgb

        small = to_rgb(small)
    buffer = io.BytesIO()
    if small.getcolors(256) is not None:
        small.save(buffer, format="PNG")
        mime = "image/png"
    else:
        small.save(buffer, format="JPEG", quality=75)
        mime = "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def _downscaled(image: Image.Image, side: int) -> Image.Image:
    """``image`` fitted into ``side`` x ``side`` (aspect kept, never enlarged): a box reduction
    by the whole factor, then a bilinear scale of what is left (under 2x); palette and 1-bit
    images by nearest neighbour, keeping their colours."""
    size = _fitted(image.size, side)
    if size == image.size:
        return image
    if image.mode in ("P", "PA", "1"):  # palette indices and bits are not blended
        return image.resize(size, Image.Resampling.NEAREST)
    if image.mode.startswith("I;16"):  # 16-bit (a depth map), which Pillow cannot reduce
        from cigeval.images import to_rgb

        image = to_rgb(image)
    factor = min(image.width // size[0], image.height // size[1])
    if factor > 1:
        image = image.reduce(factor)
    if image.size == size:
        return image
    if image.mode in ("RGB", "L"):
        # OpenCV's bilinear scale costs about a tenth of Pillow's, whose filter widens with
        # the ratio; under 2x both give the same picture to the eye (PSNR > 40 dB)
        import cv2
        import numpy as np

        scaled = cv2.resize(np.asarray(image), size, interpolation=cv2.INTER_LINEAR)
        return Image.fromarray(scaled)
    return image.resize(size, Image.Resampling.BILINEAR)


def _fitted(size: tuple[int, int], side: int) -> tuple[int, int]:
    """``size`` scaled to fit ``side`` x ``side``, aspect kept; never enlarged."""
    width, height = size
    scale = side / max(width, height)
    if scale >= 1:
        return size
    return max(1, round(width * scale)), max(1, round(height * scale))


def default_thumbnail_cache() -> Path:
    """Where thumbnails are cached unless told otherwise: ``thumbnails/`` in cigeval's cache
    folder (``$CIGEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/cigeval``)."""
    from cigeval._cache_dir import default_cache_dir

    return default_cache_dir() / "thumbnails"


#: An image file a report shows: its path, and whether it is shown as an edit mask.
FileJob = tuple[Path, bool]


def _read_thumbnail(path: Path, side: int, mask: bool = False) -> tuple[str, str]:
    """The thumbnail of the file at ``path`` and its cache key (of the bytes read)."""
    data = _file_bytes(path)
    return file_thumbnail_data_uri(data, str(path), side, mask=mask), _cache_key(data, mask)


def _file_bytes(path: Path) -> bytes:
    """The bytes of the image file at ``path``: a regular file of at most
    :data:`~cigeval._regular_file.MAX_IMAGE_BYTES` bytes (OSError for anything else)."""
    from cigeval._regular_file import MAX_IMAGE_BYTES, read_regular

    return read_regular(path, MAX_IMAGE_BYTES)


def _cache_key(data: bytes, mask: bool) -> str:
    """The key of the cached thumbnail of a file holding ``data``."""
    return hashlib.sha256(data).hexdigest() + ("-mask" if mask else "")


class ThumbnailCache:
    """Thumbnails kept between reports, in one SQLite file in ``folder`` (the response
    cache's :class:`~cigeval._cache_store.CacheStore`), under the thumbnail size and
    :data:`THUMBNAIL_METHOD`. A cache that cannot be read or written only costs time: a miss,
    nothing stored."""

    def __init__(self, folder: Path, side: int) -> None:
        from cigeval._cache_store import CacheStore

        self.store = CacheStore(folder)
        self.side = side
        # rows name their key since issue 41: a namespace of their own, so that a version of
        # cigeval from before, sharing this cache, never takes such a row for a data URI
        self.namespace = f"{side}px-{THUMBNAIL_METHOD}-keyed"

    def look_up(self, job: FileJob) -> str | None:
        """The cached thumbnail of ``job``'s file as it reads now, or None (not cached, or
        not readable: the worker that makes it says why)."""
        path, mask = job
        try:
            key = _cache_key(_file_bytes(path), mask)
            value = self.store.get(self.namespace, key)
        except (OSError, sqlite3.Error):
            return None
        return None if value is None else _checked_row(value, key, self.side)

    def keep(self, made: list[tuple[str, str]]) -> None:
        """Store the (cache key, data URI) pairs in one transaction, each row naming its key."""
        items = [(key, f"{key}\n{uri}".encode("ascii")) for key, uri in made]
        with contextlib.suppress(OSError, sqlite3.Error):
            self.store.put_many(self.namespace, items)


_THUMBNAIL_PREFIXES = ("data:image/png;base64,", "data:image/jpeg;base64,")


def _checked_row(value: bytes, key: str, side: int) -> str | None:
    """The data URI a cache row holds when the row is sound: it names ``key`` (the one it was
    looked up by) and its image decodes and fits ``side``; else None (made again)."""
    named, _, uri = value.partition(b"\n")
    if named != key.encode("ascii"):
        return None
    try:
        text = uri.decode("ascii")
        prefix = next(p for p in _THUMBNAIL_PREFIXES if text.startswith(p))
        data = base64.b64decode(text[len(prefix) :], validate=True)
    except (UnicodeDecodeError, StopIteration, ValueError):
        return None
    import cv2  # decodes without Pillow, keeping what Pillow decodes the report's images
    import numpy as np

    try:
        pixels = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    except cv2.error:
        return None
    if pixels is None or not 0 < max(pixels.shape[:2]) <= side:
        return None
    return text


def file_thumbnail_data_uri(data: bytes, where: str, side: int, *, mask: bool = False) -> str:
    """:func:`thumbnail_data_uri` of the image file whose bytes are ``data`` (read from
    ``where``), turned by its EXIF orientation as the judge is shown it."""
    try:
        opened = Image.open(io.BytesIO(data))
    except UnidentifiedImageError:  # named by its path, as when Pillow opens the path
        raise UnidentifiedImageError(f"cannot identify image file {where!r}") from None
    with opened as image:
        image.draft("RGB", _fitted(image.size, side))  # JPEG: decoded at a reduced size
        image.load()
        ImageOps.exif_transpose(image, in_place=True)
        return thumbnail_data_uri(image, side, mask=mask)


#: What a worker makes of one file: (data URI, None, cache key) or ("", why not, "").
Made = tuple[str, str | None, str]


def _read_thumbnails(jobs: list[FileJob], side: int) -> list[Made]:
    """The thumbnail of each file, or why it cannot be read: a worker's task."""
    made: list[Made] = []
    for path, mask in jobs:
        try:
            uri, key = _read_thumbnail(path, side, mask)
            made.append((uri, None, key))
        except Exception as exc:  # any unreadable image is listed, never fatal
            made.append(("", _unreadable(exc), ""))
    return made


def _unreadable(exc: Exception) -> str:
    return f"cannot be read ({type(exc).__name__}: {str(exc)[:120]})"


class ImageCatalog:
    """The thumbnails of a report by sha256, and the images that could not be shown.

    ``request`` notes an image a card shows; :meth:`resolve` reads every requested image once.
    Relative paths are tried against the results file's folder. ``cache``: the folder of
    the :class:`ThumbnailCache` (None: no cache).
    """

    def __init__(self, side: int = THUMBNAIL_SIDE, cache: Path | None = None) -> None:
        self.side = side
        self.cache = None if cache is None else ThumbnailCache(cache, side)
        self._made: list[tuple[str, str]] = []  # (cache key, data URI) of what was made now
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

    def resolve(self, workers: int | None = None) -> None:
        """Make the thumbnail of every requested image; list those that cannot be shown.

        ``workers`` (default: one per core, at most 8) threads make them, or as many worker
        processes from :data:`PROCESSES_FROM` files on (threads again if processes cannot be
        started). The outcome and its order are the same whatever the number of workers.
        """
        workers = max(1, workers or min(os.cpu_count() or 1, 8))
        files: list[tuple[str, FileJob]] = []
        others: list[tuple[str, Any, str | None]] = []  # (sha, image, why not shown)
        for sha, (path, image, users) in self._wanted.items():
            if sha in self.thumbnails:
                continue
            if image is not None:
                others.append((sha, image, None))
            elif path is None:
                others.append((sha, None, "the record names no file for it"))
            elif not path.is_file():
                others.append((sha, None, f"file not found: {path}"))
            else:  # shown as the judge is shown it: a mask if any sample gives it as one
                files.append((sha, (path, any(role == "mask" for _, role in users))))

        def in_memory(item: tuple[str, Any, str | None]) -> None:
            sha, image, reason = item
            if image is not None:
                try:
                    self.thumbnails[sha] = thumbnail_data_uri(image, self.side)
                    return
                except Exception as exc:
                    reason = _unreadable(exc)
            self._missing(sha, reason or "")

        def from_files(batch: list[tuple[str, FileJob]]) -> None:
            self._store(batch, _read_thumbnails([job for _, job in batch], self.side))

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(in_memory, others))
            if self.cache is not None:  # no worker process for what is cached (a report again)
                files = self._take_cached(files, pool, self.cache)
            use_processes = workers > 1 and len(files) >= PROCESSES_FROM
            if use_processes and self._in_processes(files, workers):
                files = []
            elif use_processes:  # processes could not run: threads make what is left
                done = {m.sha256 for m in self.missing} | set(self.thumbnails)
                files = [(sha, job) for sha, job in files if sha not in done]
            list(pool.map(from_files, _batches(files, 2)))
        if self.cache is not None and self._made:
            self.cache.keep(self._made)
            self._made = []
        # the order of the page's data: that of the requests, whichever worker finished first
        self.thumbnails = {s: self.thumbnails[s] for s in self._wanted if s in self.thumbnails}
        self.missing.sort(key=lambda m: (m.sample_id, m.role, m.sha256))

    def _take_cached(
        self, files: list[tuple[str, FileJob]], pool: ThreadPoolExecutor, cache: ThumbnailCache
    ) -> list[tuple[str, FileJob]]:
        """The thumbnails of ``files`` found in ``cache`` taken; the files left to make. When
        none of the first :data:`_CACHE_PROBE` is cached (a first report), the rest is not
        looked up: reading and hashing every file once more would only cost time."""

        def look_up(items: list[tuple[str, FileJob]]) -> list[str | None]:
            return list(pool.map(lambda item: cache.look_up(item[1]), items))

        found = look_up(files[:_CACHE_PROBE])
        if not any(found):
            return files
        found += look_up(files[_CACHE_PROBE:])
        left = []
        for item, uri in zip(files, found, strict=True):
            if uri is None:
                left.append(item)
            else:
                self.thumbnails[item[0]] = uri
        return left

    def _in_processes(self, files: list[tuple[str, FileJob]], workers: int) -> bool:
        """Thumbnails of ``files`` made by worker processes; False when they cannot run."""
        batches = _batches(files, _BATCH)
        try:
            context = multiprocessing.get_context("spawn")  # no fork of a threaded process
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                jobs = [[job for _, job in batch] for batch in batches]
                n = len(jobs)
                results = pool.map(_read_thumbnails, jobs, [self.side] * n)
                for batch, made in zip(batches, results, strict=True):
                    self._store(batch, made)
        except (OSError, BrokenProcessPool):
            return False
        return True

    def _store(self, batch: list[tuple[str, FileJob]], made: list[Made]) -> None:
        for (sha, _), (uri, reason, key) in zip(batch, made, strict=True):
            if reason is None:
                self.thumbnails[sha] = uri
                self._made.append((key, uri))
            else:
                self._missing(sha, reason)

    def _missing(self, sha: str, reason: str) -> None:
        users = self._wanted[sha][2]
        self.missing.extend(MissingImage(s, r, sha, reason) for s, r in users)

    def total_bytes(self) -> int:
        """Characters of all thumbnails' data URIs (their share of the page)."""
        return sum(len(uri) for uri in self.thumbnails.values())


def _batches(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _locate(location: Any, base_dir: Path | None) -> Path | None:
    if not isinstance(location, str) or not location:
        return None
    path = Path(location).expanduser()
    if not path.is_absolute() and base_dir is not None and not path.exists():
        path = base_dir / path
    return path


def requested_hashes(record: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """(role, sha256) of every image a record's card shows: inputs (those the judge was not
    sent too), then tool images."""
    from cigeval.results.record import images_not_shown_of, input_images_of

    yield from input_images_of(record).items()
    yield from images_not_shown_of(record).items()
    for sub in record.get("sub_scores") or []:
        if not isinstance(sub, dict):
            continue
        for role, sha in (sub.get("tool_image_ids") or {}).items():
            if isinstance(sha, str):
                yield f"{sub.get('question_id', '?')}: {role}", sha
