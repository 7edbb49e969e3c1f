"""The ImagenHub human ratings shipped inside the package (3 raters x [SC, PQ] per image).

Ratings are returned as pandas DataFrames keyed by ``task`` (a cigeval task id), ``model``
(the generator) and ``uid`` (the ImagenHub sample id), with the dimensions ``SC``, ``PQ`` and
``O`` in [0, 1].
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.cells import BadCell
from cigeval.tasks.ids import IMAGENHUB_TASK_NAMES, PAPER_TASK_ORDER

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # Python 3.11+; only for the types

#: The dimensions every loader in :mod:`cigeval.meta` provides.
DIMENSIONS: tuple[str, ...] = ("SC", "PQ", "O")

#: Generators the VIEScore and CIGEval meta-evaluations leave out (no LMM answers recorded).
EXCLUDED_BY_DEFAULT: dict[str, frozenset[str]] = {
    "text_guided_ie": frozenset({"Imagic"}),
    "subject_driven_ig": frozenset({"SuTI"}),
}

#: Index levels of every score table.
KEY: list[str] = ["task", "model", "uid"]

_DATA_DIR = "imagenhub_human_ratings"
_RATER_FILE = re.compile(r"_rater(\d+)\.tsv$")
#: The values a rater could give (ImagenHub's 0 / 0.5 / 1 scale).
RATING_VALUES = frozenset({0.0, 0.5, 1.0})


def _folder(ratings_dir: str | Path | None) -> Traversable:
    if ratings_dir is None:
        return resources.files("cigeval.data").joinpath(_DATA_DIR)
    folder = Path(ratings_dir)
    if not folder.is_dir():
        raise InputError(f"human ratings folder not found: {folder}")
    return folder


def _rater_files(root: Traversable, task: str) -> list[tuple[int, str, str]]:
    """(rater number, file name, file text) for one task."""
    folder = root.joinpath(IMAGENHUB_TASK_NAMES[task])
    found = []
    if folder.is_dir():
        for entry in folder.iterdir():
            match = _RATER_FILE.search(entry.name)
            if match:
                text = entry.read_text(encoding="utf-8")
                found.append((int(match.group(1)), str(entry), text))
    if not found:
        raise InputError(f"no human rating files (*_rater<N>.tsv) for task {task!r} in {folder}")
    return sorted(found)


def parse_rating(cell: str) -> tuple[float, float]:
    """One rater's ``[SC, PQ]`` cell; ValueError saying what is wrong unless it is a list of
    two ratings, each 0, 0.5 or 1."""
    try:
        value = json.loads(cell)
    except ValueError:
        raise ValueError("not a list [SC, PQ]") from None
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("expected a list of two ratings [SC, PQ]")
    ratings = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise ValueError(f"{item!r} is not a number")
        if float(item) not in RATING_VALUES:
            raise ValueError(f"{item!r} is not a rating (0, 0.5 or 1)")
        ratings.append(float(item))
    return ratings[0], ratings[1]


def _read_rater_file(
    task: str, rater: int, name: str, text: str, lenient: bool, skipped: list[BadCell]
) -> pd.DataFrame:
    rows: dict[str, list[Any]] = {k: [] for k in ("model", "uid", "SC", "PQ")}
    reader = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader, None)
    if not header or header[0] != "uid":
        raise InputError(f"{name} line 1: expected a header 'uid<TAB><model>...'")
    models = header[1:]
    for row in reader:
        if not row:
            continue
        if len(row) != len(header):
            raise InputError(
                f"{name} line {reader.line_num}: {len(row)} cells for {len(header)} columns"
            )
        for model, cell in zip(models, row[1:], strict=True):
            try:
                sc, pq = parse_rating(cell)
            except ValueError as exc:
                problem = BadCell(
                    name, reader.line_num, f"{model} (uid {row[0]})", repr(cell), str(exc)
                )
                if not lenient:
                    raise problem.error() from None
                skipped.append(problem)
                continue
            rows["model"].append(model)
            rows["uid"].append(row[0])
            rows["SC"].append(sc)
            rows["PQ"].append(pq)
    frame = pd.DataFrame(rows)
    frame.insert(0, "task", task)
    frame.insert(3, "rater", rater)
    return frame


@functools.cache
def _all_ratings(
    ratings_dir: str | None = None, lenient: bool = False
) -> tuple[pd.DataFrame, tuple[BadCell, ...]]:
    root = _folder(ratings_dir)
    frames: list[pd.DataFrame] = []
    skipped: list[BadCell] = []
    for task in PAPER_TASK_ORDER:
        for rater, name, text in _rater_files(root, task):
            frames.append(_read_rater_file(task, rater, name, text, lenient, skipped))
    ratings = pd.concat(frames, ignore_index=True)
    ratings["O"] = np.sqrt(ratings["SC"] * ratings["PQ"])
    return ratings, tuple(skipped)


def _ratings(ratings_dir: str | Path | None, lenient: bool) -> tuple[pd.DataFrame, list[BadCell]]:
    folder = None if ratings_dir is None else str(Path(ratings_dir).resolve())
    ratings, skipped = _all_ratings(folder, lenient)
    return ratings, list(skipped)


def _select(ratings: pd.DataFrame, all_models: bool, tasks: Iterable[str] | None) -> pd.DataFrame:
    keep = pd.Series(True, index=ratings.index)
    if tasks is not None:
        wanted = set(tasks)
        unknown = wanted - set(PAPER_TASK_ORDER)
        if unknown:
            raise InputError(f"unknown task id(s): {sorted(unknown)}")
        keep &= ratings["task"].isin(wanted)
    if not all_models:
        for task, models in EXCLUDED_BY_DEFAULT.items():
            keep &= ~((ratings["task"] == task) & ratings["model"].isin(models))
    return ratings[keep]


def load_rater_ratings(
    all_models: bool = False,
    tasks: Iterable[str] | None = None,
    ratings_dir: str | Path | None = None,
    lenient: bool = False,
) -> pd.DataFrame:
    """Every single rating: columns task, model, uid, rater (1-3), SC, PQ, O.

    ``O`` is the rater's own overall score sqrt(SC * PQ). By default the two generators the
    published meta-evaluations leave out (Imagic, SuTI) are dropped; ``all_models=True`` keeps
    them. ``tasks`` restricts to some task ids. ``ratings_dir`` reads another folder laid out
    as the shipped one (``ImagenHub_<Task>/<name>_rater<N>.tsv``). Every cell must be a list
    ``[SC, PQ]`` of ratings 0, 0.5 or 1: anything else is an :class:`InputError` naming file,
    line and cell, unless ``lenient``, which leaves such cells out and lists them in
    ``frame.attrs["skipped_cells"]``.
    """
    ratings, skipped = _ratings(ratings_dir, lenient)
    frame = _select(ratings, all_models, tasks).reset_index(drop=True).copy()
    frame.attrs["skipped_cells"] = skipped
    return frame


def load_human_ratings(
    all_models: bool = False,
    tasks: Iterable[str] | None = None,
    ratings_dir: str | Path | None = None,
    lenient: bool = False,
) -> pd.DataFrame:
    """The human score of each image: the mean over the three raters of SC, PQ and O.

    Returns a DataFrame indexed by (task, model, uid) with columns SC, PQ, O in [0, 1]; O is
    the mean over raters of sqrt(SC_r * PQ_r), not sqrt of the means. ``ratings_dir`` and
    ``lenient`` as in :func:`load_rater_ratings` (a skipped cell leaves the mean of the others).
    """
    ratings = load_rater_ratings(all_models, tasks, ratings_dir, lenient)
    frame = ratings.groupby(KEY, sort=True)[list(DIMENSIONS)].mean()
    frame.attrs["skipped_cells"] = ratings.attrs["skipped_cells"]
    return frame


def rater_matrix(
    dimension: str,
    all_models: bool = False,
    ratings_dir: str | Path | None = None,
    lenient: bool = False,
) -> pd.DataFrame:
    """One column per rater for one dimension, indexed by (task, model, uid) (NaN where a
    ``lenient`` read left a rater's cell out)."""
    if dimension not in DIMENSIONS:
        raise InputError(f"unknown dimension {dimension!r}; choose one of {DIMENSIONS}")
    ratings = load_rater_ratings(all_models=all_models, ratings_dir=ratings_dir, lenient=lenient)
    matrix = ratings.pivot_table(index=KEY, columns="rater", values=dimension, sort=True)
    matrix.attrs["skipped_cells"] = ratings.attrs["skipped_cells"]
    return matrix


def benchmark_samples() -> dict[str, list[str]]:
    """The ImagenHub sample uids of each task (1,111 in all), sorted."""
    ratings, _ = _ratings(None, False)
    return {
        task: sorted(ratings.loc[ratings["task"] == task, "uid"].unique().tolist())
        for task in PAPER_TASK_ORDER
    }
