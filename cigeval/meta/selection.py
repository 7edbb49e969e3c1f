"""Which ImagenHub images to keep: whole benchmark samples, or single generated images.

A cigeval split (``cigeval meta split``) keeps whole benchmark samples (task, uid): every
generator's image of a prompt lands on the same side. The official CIGEval split
(``test_40p.json``) keeps single images (task, generator, uid). Both arrive as plain mappings
and become a :class:`Selection`, which every restriction in :mod:`cigeval.meta` uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cigeval.errors import InputError

#: Task id -> the benchmark sample uids to keep, or task id -> generator -> image uids.
Samples = Mapping[str, Iterable[str]] | Mapping[str, Mapping[str, Iterable[str]]]


@dataclass(frozen=True)
class Selection:
    """Benchmark samples ``(task, uid)`` and single images ``(task, model, uid)`` to keep."""

    samples: frozenset[tuple[str, str]] = frozenset()
    images: frozenset[tuple[str, str, str]] = frozenset()

    def keeps(self, task: str, model: str, uid: str) -> bool:
        """Whether the image of ``model`` for sample ``uid`` of ``task`` is kept."""
        return (task, uid) in self.samples or (task, model, uid) in self.images

    def keeps_sample(self, task: str, uid: str) -> bool:
        """Whether any image of the sample is kept (for records without a generator)."""
        return (task, uid) in self.samples or (task, uid) in self._samples_of_images

    @cached_property
    def _samples_of_images(self) -> frozenset[tuple[str, str]]:
        return frozenset((task, uid) for task, _, uid in self.images)


def selection_of(value: Selection | Mapping[str, Any]) -> Selection:
    """A :class:`Selection` from task -> uids (whole samples) or task -> model -> uids
    (single images), as :meth:`cigeval.meta.Split.subset` returns them."""
    if isinstance(value, Selection):
        return value
    samples: set[tuple[str, str]] = set()
    images: set[tuple[str, str, str]] = set()
    for task, entry in value.items():
        if isinstance(entry, Mapping):
            for model, uids in entry.items():
                images.update((str(task), str(model), str(uid)) for uid in _uids(uids, task))
        else:
            samples.update((str(task), str(uid)) for uid in _uids(entry, task))
    return Selection(frozenset(samples), frozenset(images))


def _uids(value: Any, task: str) -> list[Any]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InputError(f"samples of task {task!r}: expected a list of uids, got {value!r}")
    return list(value)
