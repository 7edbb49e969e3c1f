"""Reproducible train/test splits of the ImagenHub benchmark samples, for fine-tuning work.

A split is made at the level of benchmark samples (task, uid): every generator's image of a
sample, and so every prompt, lands on the same side. It is stratified by task (each task is
split with the same fraction) and seeded. The order is a hash of seed, task and uid, so the same
seed gives the same split on any machine and any numpy version.

:func:`load_split` also reads the official CIGEval split format, ``{task: {generator:
{"sample": [uids]}}}`` (the official repository's ``test_40p.json``): a list of single test
images, per generator, so the same prompt can be on both sides. Its train side is every other
human-rated image.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cigeval.errors import InputError
from cigeval.meta.human import benchmark_samples
from cigeval.meta.scores import record_uid, task_id
from cigeval.meta.selection import selection_of

SPLIT_FORMAT = "cigeval-split/1"
SUBSETS: tuple[str, ...] = ("train", "test")


#: One side of a split: task -> uids (whole samples) or task -> model -> uids (single images).
Side = dict[str, list[str]] | dict[str, dict[str, list[str]]]


@dataclass(frozen=True)
class Split:
    """Benchmark sample uids per task on each side; ``subset('test')`` gives one side.

    ``unit`` is ``"sample"`` (cigeval splits: task -> uids, every generator's image of a
    sample on one side) or ``"image"`` (the official split format: task -> generator -> uids).
    """

    train: Side
    test: Side
    seed: int | None = None
    test_fraction: float | None = None
    unit: str = "sample"

    def subset(self, name: str) -> Side:
        """The uids per task (per task and generator for an image split) of one side."""
        if name not in SUBSETS:
            raise InputError(f"unknown subset {name!r}; use 'train' or 'test'")
        return self.train if name == "train" else self.test

    def side_of(self, task: str, uid: str, model: str | None = None) -> str | None:
        """'train', 'test' or None (sample, or with ``model`` image, in neither side)."""
        for name in SUBSETS:
            selection = selection_of(self.subset(name))
            if model is not None and selection.keeps(task, model, uid):
                return name
            if model is None and selection.keeps_sample(task, uid):
                return name
        return None

    def count(self, name: str) -> int:
        """How many samples (images, for an image split) one side holds."""
        side = self.subset(name)
        return sum(
            sum(len(u) for u in v.values()) if isinstance(v, dict) else len(v)
            for v in side.values()
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written by :func:`save_split`."""
        if self.unit != "sample":
            raise InputError("only sample-level splits are written; this one was read")
        return {
            "format": SPLIT_FORMAT,
            "unit": "benchmark sample (task, uid)",
            "stratified_by": "task",
            "seed": self.seed,
            "test_fraction": self.test_fraction,
            "counts": {name: {t: len(u) for t, u in self.subset(name).items()} for name in SUBSETS},
            "train": self.train,
            "test": self.test,
        }


def _order_key(seed: int, task: str, uid: str) -> str:
    return hashlib.sha256(f"{seed}\x00{task}\x00{uid}".encode()).hexdigest()


def make_split(
    test_fraction: float = 0.4,
    seed: int = 0,
    samples: Mapping[str, Iterable[str]] | None = None,
) -> Split:
    """Split benchmark samples into train and test, stratified by task.

    ``samples`` (task -> uids) defaults to the 1,111 ImagenHub samples. Each task contributes
    round(test_fraction * n) samples to the test side.
    """
    if not 0.0 <= test_fraction <= 1.0:
        raise InputError(f"test fraction must lie in [0, 1], got {test_fraction}")
    samples = benchmark_samples() if samples is None else samples
    train: dict[str, list[str]] = {}
    test: dict[str, list[str]] = {}
    for task, uids in samples.items():
        unique = sorted(set(map(str, uids)))
        shuffled = sorted(unique, key=lambda uid: _order_key(seed, task, uid))
        n_test = round(test_fraction * len(unique))
        test[task] = sorted(shuffled[:n_test])
        train[task] = sorted(shuffled[n_test:])
    return Split(train=train, test=test, seed=seed, test_fraction=test_fraction)


def samples_of_records(records: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Task -> sample uids of samples or results records (``metadata.uid``, else ``id``).

    Lines without a task or an id are ignored; every generator's record of one uid counts once.
    """
    found: dict[str, set[str]] = {}
    for record in records:
        if not record.get("task") or record.get("id") is None:
            continue
        found.setdefault(task_id(str(record["task"])), set()).add(record_uid(record))
    return {task: sorted(uids) for task, uids in sorted(found.items())}


def save_split(split: Split, path: str | Path) -> None:
    """Write a split as JSON (see :meth:`Split.to_dict`)."""
    try:
        Path(path).write_text(json.dumps(split.to_dict(), indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write split file {path}: {exc}") from exc


def load_split(path: str | Path) -> Split:
    """Read a split file: one written by :func:`save_split` (or any JSON with ``train`` and
    ``test`` maps of task -> uids), or one in the official CIGEval format ``{task: {model:
    {"sample": [uids]}}}`` (its images are the test side; every other rated image is train)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read split file {path}: {exc}") from exc
    if isinstance(data, dict) and _looks_official(data):
        return _official_split(data, path)
    if not isinstance(data, dict) or not all(isinstance(data.get(s), dict) for s in SUBSETS):
        raise InputError(
            f"{path}: a split file needs 'train' and 'test' maps of task -> uids (cigeval meta "
            'split), or the official format {task: {model: {"sample": [uids]}}}'
        )
    sides = {}
    for name in SUBSETS:
        side = data[name]
        if not all(isinstance(v, list) for v in side.values()):
            raise InputError(f"{path}: '{name}' must map each task to a list of uids")
        sides[name] = {str(t): [str(u) for u in v] for t, v in side.items()}
    overlap = [
        (t, u)
        for t, uids in sides["test"].items()
        for u in set(uids) & set(sides["train"].get(t, []))
    ]
    if overlap:
        raise InputError(f"{path}: {len(overlap)} sample(s) on both sides, e.g. {overlap[0]}")
    return Split(
        train=sides["train"],
        test=sides["test"],
        seed=data.get("seed"),
        test_fraction=data.get("test_fraction"),
    )


def _looks_official(data: dict[str, Any]) -> bool:
    """Whether a split file is in the official format: no train/test keys, task -> model -> {}."""
    if any(name in data for name in SUBSETS) or not data:
        return False
    return all(
        isinstance(v, dict) and all(isinstance(m, dict) for m in v.values()) for v in data.values()
    )


def _official_split(data: dict[str, Any], path: Path) -> Split:
    """The official ``{task: {model: {"sample": [uids]}}}`` file as an image-level split."""
    from cigeval.meta.human import load_human_ratings

    test: dict[str, dict[str, list[str]]] = {}
    for task, models in data.items():
        for model, entry in models.items():
            uids = entry.get("sample")
            if not isinstance(uids, list) or not all(isinstance(u, str) for u in uids):
                raise InputError(
                    f'{path}: {task} / {model}: expected {{"sample": [uids]}}, got '
                    f"{str(entry)[:80]}"
                )
            test.setdefault(task_id(str(task)), {})[str(model)] = sorted(set(uids))
    chosen = selection_of(test)
    rated = load_human_ratings(all_models=True).index
    unknown = [key for key in chosen.images if key not in rated]
    if unknown:
        raise InputError(
            f"{path}: {len(unknown)} image(s) have no ImagenHub human rating, e.g. "
            f"{' / '.join(sorted(unknown)[0])}"
        )
    train: dict[str, dict[str, list[str]]] = {}
    for task, model, uid in rated:
        if (task, model, uid) not in chosen.images:
            train.setdefault(str(task), {}).setdefault(str(model), []).append(str(uid))
    return Split(train=train, test=test, unit="image")
