"""Automatic metrics as evaluators: the CLIPScore, LPIPS, DINO and CLIP-I rows of Table 1.

A metric table has the columns ``task, model, uid, metric, value`` (tab-separated), one row
per image and metric, as ``viescore_outputs/autometrics.tsv`` (VIEScore's recorded metric
values). Each metric becomes one evaluator, correlated with the human SC ratings on the tasks
it scores. LPIPS is a distance (lower: closer to the source image), so its negative is the
score: a positive correlation then means agreement with people, the sign the CIGEval paper
reports. Values are read strictly: finite numbers, cosine similarities (CLIPScore, DINO,
CLIP-I) in [-1, 1], LPIPS at least 0; anything else is an error naming the file, the line and
the cell, or with ``lenient`` left out and listed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.cells import BadCell, check_number, read_table
from cigeval.meta.frames import evaluator_frame, task_id

AUTOMETRIC_COLUMNS = ("task", "model", "uid", "metric", "value")

#: Metric name in the table -> the name of its row in the paper's Table 1, in that order.
METRIC_LABELS: dict[str, str] = {
    "CLIP_Score": "CLIPScore",
    "LPIPS": "LPIPS",
    "DINO": "DINO",
    "CLIP_I": "CLIP-I",
}

#: Metrics where a lower value means more alike: their negative is the score.
DISTANCES = frozenset({"LPIPS"})

#: The range each known metric's values lie in (others: any finite number).
_RANGES: dict[str, tuple[float, float]] = {
    "CLIP_Score": (-1.0, 1.0),
    "DINO": (-1.0, 1.0),
    "CLIP_I": (-1.0, 1.0),
    "LPIPS": (0.0, math.inf),
}


def _value(text: str, metric: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("not a number") from None
    low, high = _RANGES.get(metric, (-math.inf, math.inf))
    problem = check_number(value, low, high)
    if problem:
        raise ValueError(problem)
    return value


def load_autometrics(path: str | Path, lenient: bool = False) -> dict[str, pd.DataFrame]:
    """One evaluator frame per metric of a metric table, keyed by the metric's Table 1 name
    (CLIPScore, LPIPS, DINO, CLIP-I; other metrics keep their own), in the paper's order.

    Each frame holds the metric's score as ``SC`` (LPIPS negated); PQ and O are missing, as
    the published rows are SC correlations. ``frame.attrs["skipped_cells"]`` lists the cells a
    ``lenient`` read left out.
    """
    path = Path(path)
    at, rows = read_table(path, AUTOMETRIC_COLUMNS, "an automatic-metric table")
    by_metric: dict[str, dict[str, list[Any]]] = {}
    skipped: dict[str, list[BadCell]] = {}
    for line, row in rows:
        metric = row[at["metric"]].strip()
        columns = by_metric.setdefault(
            metric, {k: [] for k in ("task", "model", "uid", "SC", "PQ", "O", "failed")}
        )
        try:
            value = _value(row[at["value"]], metric)
        except ValueError as exc:
            bad = BadCell(str(path), line, f"value ({metric})", repr(row[at["value"]]), str(exc))
            if not lenient:
                raise bad.error() from None
            skipped.setdefault(metric, []).append(bad)
            value = math.nan
        columns["task"].append(task_id(row[at["task"]]))
        columns["model"].append(row[at["model"]])
        columns["uid"].append(row[at["uid"]])
        columns["SC"].append(-value if metric in DISTANCES else value)
        columns["PQ"].append(math.nan)
        columns["O"].append(math.nan)
        columns["failed"].append(False)
    if not by_metric:
        raise InputError(f"{path}: no metric values")
    order = [m for m in METRIC_LABELS if m in by_metric] + sorted(
        set(by_metric) - set(METRIC_LABELS)
    )
    frames = {}
    for metric in order:
        frame = evaluator_frame(by_metric[metric], "cell", f"{path} ({metric})", "autometrics")
        frame.attrs["skipped_cells"] = skipped.get(metric, [])
        frame.attrs["metric"] = metric
        frames[METRIC_LABELS.get(metric, metric)] = frame
    return frames


def metric_tasks(frame: pd.DataFrame) -> list[str]:
    """The tasks a metric scores (those its frame has values for)."""
    return sorted(set(frame.index.get_level_values("task")))
