"""Splits that never leak: every item of one prompt group on the same side.

A group is what must not straddle train and held-out: one prompt (one benchmark sample, with
every generator's image of it), or one editing condition. Orders come from a SHA-256 of the
seed and the group, as :func:`cigeval.meta.make_split` does, so a seed gives the same split
on any machine and numpy version. The official ImagenHub split is taken as it is
(:func:`official_fold`); it lists single images, so it alone may put two generators' images of
a prompt on different sides.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from cigeval.errors import InputError
from cigeval.meta.split import Split


@dataclass(frozen=True)
class Fold:
    """Item indices of the train side and the held-out side of one split."""

    train: np.ndarray
    test: np.ndarray
    name: str = ""


def _order(seed: int, salt: str, groups: Iterable[str]) -> list[str]:
    def key(group: str) -> str:
        return hashlib.sha256(f"{seed}\x00{salt}\x00{group}".encode()).hexdigest()

    return sorted(set(groups), key=key)


def grouped_kfold(groups: Sequence[str], k: int, seed: int = 0, salt: str = "") -> list[Fold]:
    """``k`` folds of whole groups (dealt in a seeded order); each fold is held out once."""
    names = np.asarray([str(g) for g in groups])
    distinct = _order(seed, f"kfold{salt}", names)
    if k < 2:
        raise InputError(f"a k-fold split needs k >= 2, got {k}")
    if len(distinct) < k:
        raise InputError(f"{len(distinct)} prompt group(s) cannot make {k} folds")
    fold_of = {g: i % k for i, g in enumerate(distinct)}
    codes = np.asarray([fold_of[g] for g in names])
    return [
        Fold(np.flatnonzero(codes != i), np.flatnonzero(codes == i), f"fold {i + 1}/{k}")
        for i in range(k)
    ]


def repeated_holdout(
    groups: Sequence[str], splits: int, test_fraction: float = 0.4, seed: int = 0
) -> list[Fold]:
    """``splits`` seeded train/held-out splits, each holding out ``test_fraction`` of the
    groups (rounded, at least one, and at least one left to train on)."""
    if not 0.0 < test_fraction < 1.0:
        raise InputError(f"the held-out fraction must lie in (0, 1), got {test_fraction}")
    names = np.asarray([str(g) for g in groups])
    count = len(set(names.tolist()))
    if count < 2:
        raise InputError("a split needs at least two prompt groups")
    n_test = min(max(1, round(test_fraction * count)), count - 1)
    folds = []
    for index in range(splits):
        held = set(_order(seed, f"split{index}", names)[:n_test])
        test = np.asarray([g in held for g in names])
        folds.append(Fold(np.flatnonzero(~test), np.flatnonzero(test), f"split {index}"))
    return folds


def official_fold(keys: Sequence[tuple[str, str, str]], split: Split) -> Fold:
    """The train and held-out items of an official (or ``cigeval meta split``) split;
    ``keys`` are (task, model, uid). Items on neither side are left out."""
    sides = [split.side_of(task, uid, model) for task, model, uid in keys]
    train = np.asarray([i for i, s in enumerate(sides) if s == "train"], dtype=int)
    test = np.asarray([i for i, s in enumerate(sides) if s == "test"], dtype=int)
    if not len(train) or not len(test):
        raise InputError(
            f"the split leaves {len(train)} item(s) to train on and {len(test)} held out; "
            "both sides need items with scores and labels"
        )
    return Fold(train, test, "official split")


def inner_folds(groups: np.ndarray, items: np.ndarray, k: int = 5, seed: int = 0) -> list[Fold]:
    """Grouped folds within ``items`` (indices into ``groups``), for choices made on a train
    side; fewer folds when there are fewer groups (none below two groups)."""
    distinct = len(set(groups[items].tolist()))
    k = min(k, distinct)
    if k < 2:
        return []
    local = grouped_kfold(groups[items].tolist(), k, seed, salt="inner")
    return [Fold(items[f.train], items[f.test], f.name) for f in local]
