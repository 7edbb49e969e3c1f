"""The image files of a sample, hashed: what a resumed run compares with what it judged.

Each record keeps, in ``provenance.image_files``, the sha256 of every image file of its
sample as the run found it (by role: ``output``, ``subjects[1]``, ``candidates.A``). A rerun
hashes them again for the samples already recorded: an image replaced on disk since makes
the sample be judged again, instead of keeping a score of an image that is gone. Within
:func:`recording_failed_inputs` (a run), the evaluator hashes the files of a sample whose
images it could not load, off the event loop as it loads them; the run hashes those of a
record from elsewhere (a Ray worker) and of a record it resumes.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from cigeval._digest import known_file_sha256
from cigeval._regular_file import MAX_IMAGE_BYTES
from cigeval.errors import CigevalError
from cigeval.images import image_path
from cigeval.sample import Sample, SampleLine, image_inputs, sample_from_dict

#: What an image file that cannot be read hashes to (it differs from any sha256).
UNREADABLE = "unreadable"

_RECORDING_FAILED = ContextVar("cigeval_recording_failed_inputs", default=False)


@contextlib.contextmanager
def recording_failed_inputs() -> Iterator[None]:
    """Within: the Score of a sample whose images could not be loaded holds the hashes of
    its files (:attr:`~cigeval.score.Score.file_hashes`), read off the event loop by the
    evaluator, for the run's record. Elsewhere (inspect, serve) no such file is read again:
    one whose read never ends would hold up that sample's answer."""
    token = _RECORDING_FAILED.set(True)
    try:
        yield
    finally:
        _RECORDING_FAILED.reset(token)


def failed_inputs_recorded() -> bool:
    """Whether :func:`recording_failed_inputs` is in force here."""
    return _RECORDING_FAILED.get()


def _file_sha256(path: Path, max_bytes: int) -> str:
    try:
        return known_file_sha256(path, max_bytes)
    except (OSError, ValueError):  # missing, no regular file, too large, a NUL in the name
        return UNREADABLE


def image_file_hashes(item: Any, max_bytes: int = MAX_IMAGE_BYTES) -> dict[str, str]:
    """The sha256 of each image of ``item`` given as a file (by path) or as file bytes, by
    role; images given as PIL images, and items that are no valid sample, have none. A file
    that is no regular file (a FIFO, a device) or holds more than ``max_bytes`` bytes is
    :data:`UNREADABLE`, never read."""
    sample = item.sample if isinstance(item, SampleLine) else item
    if isinstance(sample, dict):
        try:
            sample = sample_from_dict(sample)  # as the evaluator reads a dict
        except (CigevalError, ValueError, TypeError, RecursionError):  # no valid sample
            return {}
    if not isinstance(sample, Sample):
        return {}
    hashes: dict[str, str] = {}
    for role, value in image_inputs(sample):
        if isinstance(value, bytes):
            hashes[role] = hashlib.sha256(value).hexdigest()
        elif isinstance(value, str | Path):
            hashes[role] = _file_sha256(image_path(value, sample.base_dir), max_bytes)
    return hashes


def changed_roles(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """The roles whose image differs between two :func:`image_file_hashes` (added or removed
    roles included)."""
    return sorted(role for role in {*before, *now} if before.get(role) != now.get(role))
