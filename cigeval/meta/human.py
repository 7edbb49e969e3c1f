"""The ImagenHub human ratings shipped inside the package (3 raters x [SC, PQ] per image).

Ratings are returned as pandas DataFrames keyed by ``task`` (a cigeval task id), ``model``
(the generator) and ``uid`` (the ImagenHub sample id), with the dimensions ``SC``, ``PQ`` and
``O`` in [0, 1].
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Iterable
from importlib import resources

import numpy as np
import pandas as pd

from cigeval.errors import InputError
from cigeval.tasks.ids import IMAGENHUB_TASK_NAMES, PAPER_TASK_ORDER

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
_PAIR = r"^\s*\[\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\]\s*$"
_RATER_FILE = re.compile(r"_rater(\d+)\.tsv$")


def _rater_files(task: str) -> list[tuple[int, str, str]]:
    """(rater number, file name, file text) for one task, read from the package data."""
    folder = resources.files("cigeval.data").joinpath(_DATA_DIR, IMAGENHUB_TASK_NAMES[task])
    found = []
    for entry in folder.iterdir():
        match = _RATER_FILE.search(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    if not found:
        raise InputError(f"no human rating files for task {task!r} in the package data")
    return sorted(found)


@functools.cache
def _all_ratings() -> pd.DataFrame:
    frames = []
    for task in PAPER_TASK_ORDER:
        for rater, name, text in _rater_files(task):
            table = pd.read_csv(io.StringIO(text), sep="\t", dtype=str, keep_default_na=False)
            long = table.melt(id_vars="uid", var_name="model", value_name="cell")
            parsed = long["cell"].str.extract(_PAIR)
            bad = parsed.isna().any(axis=1).to_numpy()
            if bad.any():
                row = long[bad].iloc[0]
                raise InputError(
                    f"{name} uid {row['uid']} model {row['model']}: expected a cell "
                    f"'[SC, PQ]', got {row['cell']!r}"
                )
            values = parsed.to_numpy(dtype=float)
            frames.append(
                pd.DataFrame(
                    {
                        "task": task,
                        "model": long["model"].to_numpy(),
                        "uid": long["uid"].to_numpy(),
                        "rater": rater,
                        "SC": values[:, 0],
                        "PQ": values[:, 1],
                    }
                )
            )
    ratings = pd.concat(frames, ignore_index=True)
    ratings["O"] = np.sqrt(ratings["SC"] * ratings["PQ"])
    return ratings


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
    all_models: bool = False, tasks: Iterable[str] | None = None
) -> pd.DataFrame:
    """Every single rating: columns task, model, uid, rater (1-3), SC, PQ, O.

    ``O`` is the rater's own overall score sqrt(SC * PQ). By default the two generators the
    published meta-evaluations leave out (Imagic, SuTI) are dropped; ``all_models=True`` keeps
    them. ``tasks`` restricts to some task ids.
    """
    return _select(_all_ratings(), all_models, tasks).reset_index(drop=True).copy()


def load_human_ratings(
    all_models: bool = False, tasks: Iterable[str] | None = None
) -> pd.DataFrame:
    """The human score of each image: the mean over the three raters of SC, PQ and O.

    Returns a DataFrame indexed by (task, model, uid) with columns SC, PQ, O in [0, 1]; O is
    the mean over raters of sqrt(SC_r * PQ_r), not sqrt of the means.
    """
    ratings = load_rater_ratings(all_models=all_models, tasks=tasks)
    return ratings.groupby(KEY, sort=True)[list(DIMENSIONS)].mean()


def rater_matrix(dimension: str, all_models: bool = False) -> pd.DataFrame:
    """One column per rater for one dimension, indexed by (task, model, uid)."""
    if dimension not in DIMENSIONS:
        raise InputError(f"unknown dimension {dimension!r}; choose one of {DIMENSIONS}")
    ratings = load_rater_ratings(all_models=all_models)
    return ratings.pivot_table(index=KEY, columns="rater", values=dimension, sort=True)


def benchmark_samples() -> dict[str, list[str]]:
    """The ImagenHub sample uids of each task (1,111 in all), sorted."""
    ratings = _all_ratings()
    return {
        task: sorted(ratings.loc[ratings["task"] == task, "uid"].unique().tolist())
        for task in PAPER_TASK_ORDER
    }
