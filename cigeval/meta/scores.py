"""Loading evaluator scores: cigeval results JSONL, VIEScore-style tables, metric tables.

Every loader returns an *evaluator frame* (see :mod:`cigeval.meta.frames`): indexed by (task,
model, uid) with SC, PQ, O and ``failed``. The formats and their strict reading live in
:mod:`cigeval.meta.records` (cigeval results), :mod:`cigeval.meta.viescore_table` and
:mod:`cigeval.meta.autometrics`; this module picks one by name or file extension.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd

from cigeval._caller import in_callers_words
from cigeval.errors import InputError
from cigeval.meta.autometrics import load_autometrics
from cigeval.meta.frames import MissingPolicy, record_uid, split_runs, task_id
from cigeval.meta.records import load_cigeval_results, records_to_frame
from cigeval.meta.viescore_table import load_viescore_tsv, viescore_cell

ScoreFormat = Literal["cigeval", "viescore", "autometrics"]
SCORE_FORMATS: tuple[str, ...] = ("cigeval", "viescore", "autometrics")

__all__ = [
    "SCORE_FORMATS",
    "MissingPolicy",
    "ScoreFormat",
    "guess_format",
    "load_autometrics",
    "load_cigeval_results",
    "load_scores",
    "load_viescore_tsv",
    "record_uid",
    "records_to_frame",
    "split_runs",
    "task_id",
    "viescore_cell",
]


def guess_format(path: str | Path) -> ScoreFormat:
    """``viescore`` for .tsv files, ``cigeval`` for anything else (JSONL)."""
    return "viescore" if str(path).lower().endswith((".tsv", ".tab")) else "cigeval"


def load_scores(
    path: str | Path,
    fmt: ScoreFormat | None = None,
    missing: MissingPolicy = "cell",
    list_aggregate: str | None = None,
    lenient: bool = False,
) -> pd.DataFrame:
    """Load one score file in the given (or guessed) format.

    ``list_aggregate`` is the rule turning each VIEScore-style score list into the image's
    score (default ``min``). cigeval results already hold their score (the rule was chosen at
    evaluation time with ``--aggregate``), so they take none. Cells are read strictly;
    ``lenient`` leaves malformed ones out and lists them in ``frame.attrs["skipped_cells"]``.
    A metric table holds several evaluators: read it with :func:`load_autometrics`.
    """
    fmt = fmt or guess_format(path)
    if fmt == "viescore":
        rule = list_aggregate or "min"
        return load_viescore_tsv(path, missing=missing, rule=rule, lenient=lenient)
    if list_aggregate is not None:
        raise InputError(
            f"{path}: a list aggregate applies to VIEScore-style tables only; cigeval "
            "results carry their score (choose its rule with "
            f"{in_callers_words('`cigeval evaluate --aggregate`', 'evaluate(..., aggregate=...)')})"
        )
    if fmt == "cigeval":
        return load_cigeval_results(path, missing=missing, lenient=lenient)
    if fmt == "autometrics":
        frames = load_autometrics(path, lenient=lenient)
        if len(frames) > 1:
            raise InputError(
                f"{path} holds {len(frames)} metrics ({', '.join(frames)}); read it with "
                "load_autometrics, one evaluator per metric"
            )
        return next(iter(frames.values()))
    raise InputError(f"unknown score format {fmt!r}; use one of {', '.join(SCORE_FORMATS)}")
