"""Combining several evaluators' scores per image into one (judge ensembles, issue 6).

Each dimension (SC, PQ, O) is combined on its own, image by image, over the sources. Only
images that every source scored get a combined value; the others are counted as missing so the
coverage report shows what the ensemble left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.frames import run_fingerprint
from cigeval.meta.human import DIMENSIONS
from cigeval.rules import combine

#: Grid step of ``majority`` on the [0, 1] scale: 0.1 is the judges' 0-10 scale.
DEFAULT_GRID_STEP = 0.1


def combine_scores(
    frames: Sequence[pd.DataFrame],
    rule: str = "mean",
    trim: float = 0.2,
    grid_step: float = DEFAULT_GRID_STEP,
) -> pd.DataFrame:
    """Combine evaluator frames (see :mod:`cigeval.meta.scores`) image by image.

    The result is an evaluator frame over the union of the images, with extra columns
    ``n_sources`` (how many sources had the image) and ``n_SC``, ``n_PQ``, ``n_O`` (how many
    had a value for that dimension); ``attrs["sources"]`` holds the number of sources. A
    dimension gets a value only where every source has one; an image is ``failed`` when any
    source's evaluation failed. Each source must be one run (one fingerprint): the judges
    combined are named by the caller, never mixed in silently.
    """
    if not frames:
        raise InputError("nothing to combine: give at least one score source")
    combine([0.0], rule)  # an unknown rule fails here, before any work
    for frame in frames:
        run_fingerprint(frame)
    index = frames[0].index
    for frame in frames[1:]:
        index = index.union(frame.index)
    aligned = [frame.reindex(index) for frame in frames]
    result = pd.DataFrame(index=index)
    for dim in DIMENSIONS:
        stacked = np.column_stack([f[dim].to_numpy(dtype=float) for f in aligned])
        complete = ~np.isnan(stacked).any(axis=1)
        values = np.full(len(index), np.nan)
        if stacked.shape[1] == 1:
            values[complete] = stacked[complete, 0]
        else:
            values[complete] = [
                combine(list(row), rule, grid=grid_step, trim=trim) for row in stacked[complete]
            ]
        result[dim] = values
    present = np.column_stack([f["failed"].notna().to_numpy() for f in aligned])
    failed = np.column_stack([f["failed"].fillna(False).to_numpy(dtype=bool) for f in aligned])
    result["failed"] = pd.Series(failed.any(axis=1), index=index)
    result["n_sources"] = present.sum(axis=1)
    for dim in DIMENSIONS:
        result[f"n_{dim}"] = sum(f[dim].notna().to_numpy(dtype=int) for f in aligned)
    result.attrs["sources"] = len(frames)
    formats = {f.attrs.get("source_format") for f in frames}
    result.attrs["source_format"] = formats.pop() if len(formats) == 1 else "combined"
    return result
