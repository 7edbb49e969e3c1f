"""Evaluator frames: what every score loader of :mod:`cigeval.meta` returns.

An evaluator frame is a DataFrame indexed by (task, model, uid) with the float columns SC, PQ,
O (NaN where the evaluator gave no value) and a boolean column ``failed`` (the evaluation
itself ended in an error); cigeval results add the run ``fingerprint`` of each row. Rows absent
from the frame are images the evaluator never saw; the coverage report tells the two apart.
``frame.attrs`` carries what the loader left out (``skipped_lines``, ``skipped_cells``,
``duplicate_ids``) and the ``source_format``, which decides the published rounding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.human import DIMENSIONS, KEY
from cigeval.tasks.ids import TASK_ID_BY_IMAGENHUB_NAME

MissingPolicy = Literal["cell", "row"]


def task_id(name: str) -> str:
    """A cigeval task id for either a task id or an ImagenHub folder name (others unchanged)."""
    return TASK_ID_BY_IMAGENHUB_NAME.get(name, name)


def record_uid(record: Mapping[str, Any]) -> str:
    """The benchmark sample a result record is about: ``metadata.uid`` when present (samples
    made by :func:`cigeval.meta.imagenhub_samples` have ids unique per generator), else ``id``.
    """
    metadata = record.get("metadata")
    if isinstance(metadata, dict) and metadata.get("uid") is not None:
        return str(metadata["uid"])
    return str(record["id"])


def evaluator_frame(
    rows: Mapping[str, list[Any]], missing: MissingPolicy, source: str, source_format: str
) -> pd.DataFrame:
    """Build an evaluator frame from columns task, model, uid, SC, PQ, O, failed (and
    optionally fingerprint); two rows for one image (in one run) are an error."""
    frame = pd.DataFrame(dict(rows))
    for dim in DIMENSIONS:
        frame[dim] = frame[dim].astype(float)
    frame["failed"] = frame["failed"].astype(bool)
    if missing == "row":
        # A row with any empty dimension counts as one failed evaluation, as VIEScore's own
        # tables treat a half-answered image.
        incomplete = frame[list(DIMENSIONS)].isna().any(axis=1)
        frame.loc[incomplete, list(DIMENSIONS)] = np.nan
    elif missing != "cell":
        raise InputError(f"unknown missing-value policy {missing!r}; use 'cell' or 'row'")
    key = [*KEY, "fingerprint"] if "fingerprint" in frame.columns else KEY
    duplicated = frame.duplicated(subset=key, keep=False)
    if duplicated.any():
        first = frame.loc[duplicated, KEY].iloc[0].tolist()
        raise InputError(
            f"{source}: {int(duplicated.sum())} rows share a (task, model, uid) key, "
            f"e.g. {first}; keep one score per image"
        )
    frame = frame.set_index(KEY).sort_index()
    frame.attrs["source_format"] = source_format
    return frame


def run_fingerprint(scores: pd.DataFrame) -> str | None:
    """The run fingerprint of an evaluator frame (None without one); an error when the frame
    holds records of several runs, which must never be pooled into one number."""
    if "fingerprint" not in scores.columns:
        return None
    found = sorted({str(f) for f in scores["fingerprint"].dropna()})
    if len(found) > 1:
        raise InputError(
            f"the scores come from {len(found)} runs with different settings (fingerprints "
            f"{', '.join(found)}); correlate each run on its own (cigeval.meta.split_runs)"
        )
    return found[0] if found else None


def split_runs(scores: pd.DataFrame) -> list[tuple[str | None, pd.DataFrame]]:
    """One evaluator frame per run fingerprint, in the order the runs first appear (a frame
    without fingerprints is one run, ``None``)."""
    if "fingerprint" not in scores.columns:
        return [(None, scores)]
    runs: list[tuple[str | None, pd.DataFrame]] = []
    for fingerprint in dict.fromkeys(scores["fingerprint"].tolist()):
        part = scores[scores["fingerprint"] == fingerprint].copy()
        part.attrs = dict(scores.attrs)
        runs.append((str(fingerprint), part))
    return runs
