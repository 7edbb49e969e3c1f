"""Evaluator scores from cigeval results JSONL and from VIEScore-style score tables.

Every loader returns an *evaluator frame*: a DataFrame indexed by (task, model, uid) with the
float columns SC, PQ, O (NaN where the evaluator gave no value) and a boolean column
``failed`` (the evaluation itself ended in an error). Rows absent from the frame are images the
evaluator never saw; the coverage report tells the two apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.human import DIMENSIONS, KEY
from cigeval.rules import AGGREGATE_RULES, aggregate
from cigeval.tasks.ids import TASK_ID_BY_IMAGENHUB_NAME

ScoreFormat = Literal["cigeval", "viescore"]
MissingPolicy = Literal["cell", "row"]

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_VIESCORE_COLUMNS = ("task", "model", "uid", "sc_score", "pq_score")


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


def viescore_cell(cell: str, rule: str = "min") -> float:
    """The image score of one VIEScore answer: aggregate(list) / 10 clipped to [0, 1].

    ``rule`` is one of :data:`cigeval.rules.AGGREGATE_RULES`; VIEScore's own is ``min``.
    Accepts a list (``[7, 8]``), a bare number (``9``) or quoted numbers; an empty cell or one
    without any number gives NaN (no answer stored).
    """
    numbers = [float(v) for v in _NUMBER.findall(cell)]
    if not numbers:
        return math.nan
    return min(max(aggregate(numbers, rule) / 10.0, 0.0), 1.0)


def _frame(rows: dict[str, list[Any]], missing: MissingPolicy, source: str) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
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
    duplicated = frame.duplicated(subset=KEY, keep=False)
    if duplicated.any():
        first = frame.loc[duplicated, KEY].iloc[0].tolist()
        raise InputError(
            f"{source}: {int(duplicated.sum())} rows share a (task, model, uid) key, "
            f"e.g. {first}; keep one score per image"
        )
    return frame.set_index(KEY).sort_index()


def load_viescore_tsv(
    path: str | Path, missing: MissingPolicy = "cell", rule: str = "min"
) -> pd.DataFrame:
    """Read a VIEScore-style table (columns task, model, uid, sc_score, pq_score).

    Each score is rule(list)/10 clipped to [0, 1] (``rule`` from
    :data:`cigeval.rules.AGGREGATE_RULES`; VIEScore's is ``min``, ``min_tiebreak_mean`` breaks
    its ties); O = sqrt(SC * PQ). With ``missing='cell'`` an empty cell makes only its own
    dimension (and O) missing; with ``'row'`` the whole image counts as missing.
    """
    if rule not in AGGREGATE_RULES:
        raise InputError(
            f"unknown list aggregate {rule!r}; use one of {', '.join(AGGREGATE_RULES)}"
        )
    path = Path(path)
    try:
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read score table {path}: {exc}") from exc
    absent = [c for c in _VIESCORE_COLUMNS if c not in table.columns]
    if absent:
        raise InputError(
            f"{path}: not a VIEScore-style table, missing column(s) {absent} "
            f"(expected {', '.join(_VIESCORE_COLUMNS)})"
        )
    sc = [viescore_cell(c, rule) for c in table["sc_score"]]
    pq = [viescore_cell(c, rule) for c in table["pq_score"]]
    rows: dict[str, list[Any]] = {
        "task": [task_id(t) for t in table["task"]],
        "model": table["model"].tolist(),
        "uid": table["uid"].tolist(),
        "SC": sc,
        "PQ": pq,
        "O": [math.sqrt(s * p) for s, p in zip(sc, pq, strict=True)],
        "failed": [False] * len(table),
    }
    return _frame(rows, missing, str(path))


def _number(value: Any, where: str) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where}: expected a number or null, got {value!r}")
    return float(value)


def records_to_frame(
    records: list[dict[str, Any]], missing: MissingPolicy = "cell", source: str = "records"
) -> pd.DataFrame:
    """Turn cigeval result records (``Score.to_record`` dicts) into an evaluator frame.

    SC is ``dimensions.SC`` when present, else ``score``; PQ and O come from ``dimensions``
    (O falls back to sqrt(SC * PQ)). A record with status ``error`` is a failed evaluation.
    Records must carry ``id``, ``task`` and the generator ``model`` (a pass-through field).
    """
    rows: dict[str, list[Any]] = {k: [] for k in (*KEY, *DIMENSIONS, "failed")}
    for i, record in enumerate(records, start=1):
        where = f"{source} record {i}"
        if not isinstance(record, dict):
            raise InputError(f"{where}: expected a JSON object")
        lacking = [k for k in ("id", "task", "status") if k not in record]
        if "model" not in record:
            lacking.append("model (the generator; pass it through from the sample)")
        if lacking:
            raise InputError(f"{where}: missing field(s) {', '.join(lacking)}")
        failed = record["status"] != "ok"
        dims = record.get("dimensions") or {}
        sc = _number(dims.get("SC", record.get("score")), where)
        pq = _number(dims.get("PQ"), where)
        overall = _number(dims.get("O"), where)
        if math.isnan(overall) and not (math.isnan(sc) or math.isnan(pq)):
            overall = math.sqrt(sc * pq)
        if failed:
            sc = pq = overall = math.nan
        rows["task"].append(task_id(str(record["task"])))
        rows["model"].append(str(record["model"]))
        rows["uid"].append(record_uid(record))
        rows["SC"].append(sc)
        rows["PQ"].append(pq)
        rows["O"].append(overall)
        rows["failed"].append(failed)
    return _frame(rows, missing, source)


def load_cigeval_results(path: str | Path, missing: MissingPolicy = "cell") -> pd.DataFrame:
    """Read a cigeval results JSONL file into an evaluator frame (see :func:`records_to_frame`).

    Lines that cannot be read are skipped (the one policy of :func:`cigeval.read_records`) and
    listed in ``frame.attrs["skipped_lines"]``, so the coverage report can name them.
    """
    from cigeval.results import SkippedLine, read_records

    if not Path(path).is_file():
        raise InputError(f"cannot read results file {path}: no such file")
    skipped: list[SkippedLine] = []
    records = list(read_records(path, skipped))
    frame = records_to_frame(records, missing=missing, source=str(path))
    frame.attrs["skipped_lines"] = [str(s) for s in skipped]
    return frame


def guess_format(path: str | Path) -> ScoreFormat:
    """``viescore`` for .tsv files, ``cigeval`` for anything else (JSONL)."""
    return "viescore" if str(path).lower().endswith((".tsv", ".tab")) else "cigeval"


def load_scores(
    path: str | Path,
    fmt: ScoreFormat | None = None,
    missing: MissingPolicy = "cell",
    list_aggregate: str | None = None,
) -> pd.DataFrame:
    """Load one score file in the given (or guessed) format.

    ``list_aggregate`` is the rule turning each VIEScore-style score list into the image's
    score (default ``min``). cigeval results already hold their score (the rule was chosen at
    evaluation time with ``--aggregate``), so they take none.
    """
    fmt = fmt or guess_format(path)
    if fmt == "viescore":
        return load_viescore_tsv(path, missing=missing, rule=list_aggregate or "min")
    if fmt == "cigeval":
        if list_aggregate is not None:
            raise InputError(
                f"{path}: a list aggregate applies to VIEScore-style tables only; cigeval "
                "results carry their score (choose its rule with `cigeval evaluate --aggregate`)"
            )
        return load_cigeval_results(path, missing=missing)
    raise InputError(f"unknown score format {fmt!r}; use 'cigeval' or 'viescore'")
