"""VIEScore-style score tables: one row per image, the LMM's 0-10 score lists as cells.

Columns ``task, model, uid, sc_score, pq_score`` (tab-separated). A cell is empty (no answer
stored), one number, or a JSON list of numbers on 0-10: at least one and at most as many as
the VIEScore prompt of the task asks for (SC: one for Text-Guided IG, three for Multi-Concept
IC, two elsewhere; PQ: two). A shorter list is a partial answer, which the published tables
took as it was. Anything else (``[7, x]``, ``[11, 5]``, ``[-3, 2]``, ``[1e3, 5]``, quoted
numbers, ``[]``) is an error naming the file, the line and the cell, or with ``lenient`` a
missing value, listed in ``frame.attrs["skipped_cells"]``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.cells import BadCell, check_number, read_table
from cigeval.meta.frames import MissingPolicy, evaluator_frame, task_id
from cigeval.rules import AGGREGATE_RULES, aggregate

VIESCORE_COLUMNS = ("task", "model", "uid", "sc_score", "pq_score")

#: How many scores the VIEScore prompts ask for: SC per task (default 2), PQ always 2.
_SC_LENGTH = {"text_guided_ig": 1, "multi_concept_ic": 3}
_DEFAULT_SC_LENGTH, _PQ_LENGTH = 2, 2
_SCALE = (0.0, 10.0)


def parse_score_list(cell: str, max_length: int | None = None) -> list[float] | None:
    """The scores of one cell (None for an empty cell); ValueError saying what is wrong."""
    if not cell.strip():
        return None
    try:
        value = json.loads(cell)
    except ValueError:
        raise ValueError("not a number or a JSON list of numbers") from None
    values = value if isinstance(value, list) else [value]
    if not values:
        raise ValueError("an empty list holds no score")
    if max_length is not None and len(values) > max_length:
        raise ValueError(f"{len(values)} scores where the prompt asks for at most {max_length}")
    numbers = []
    for item in values:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise ValueError(f"{json.dumps(item)} is not a number")
        problem = check_number(float(item), *_SCALE)
        if problem:
            raise ValueError(problem)
        numbers.append(float(item))
    return numbers


def viescore_cell(cell: str, rule: str = "min", max_length: int | None = None) -> float:
    """The image score of one VIEScore answer: rule(list) / 10, NaN for an empty cell.

    ``rule`` is one of :data:`cigeval.rules.AGGREGATE_RULES`; VIEScore's own is ``min``. A cell
    that is not a number or a list of numbers on 0-10 (of at most ``max_length`` scores) is a
    ValueError.
    """
    numbers = parse_score_list(cell, max_length)
    if numbers is None:
        return math.nan
    return aggregate(numbers, rule) / 10.0


def load_viescore_tsv(
    path: str | Path, missing: MissingPolicy = "cell", rule: str = "min", lenient: bool = False
) -> pd.DataFrame:
    """Read a VIEScore-style table (columns task, model, uid, sc_score, pq_score).

    Each score is rule(list)/10 (``rule`` from :data:`cigeval.rules.AGGREGATE_RULES`;
    VIEScore's is ``min``, ``min_tiebreak_mean`` breaks its ties); O = sqrt(SC * PQ). With
    ``missing='cell'`` an empty cell makes only its own dimension (and O) missing; with
    ``'row'`` the whole image counts as missing. Cells are read strictly (see the module
    docstring); ``lenient`` turns a malformed cell into a missing one and lists it in
    ``frame.attrs["skipped_cells"]``.
    """
    if rule not in AGGREGATE_RULES:
        raise InputError(
            f"unknown list aggregate {rule!r}; use one of {', '.join(AGGREGATE_RULES)}"
        )
    path = Path(path)
    at, rows = read_table(path, VIESCORE_COLUMNS, "a VIEScore-style table")
    columns: dict[str, list[Any]] = {k: [] for k in ("task", "model", "uid", "SC", "PQ", "O")}
    skipped: list[BadCell] = []
    for line, row in rows:
        task = task_id(row[at["task"]])
        lengths = {"sc_score": _SC_LENGTH.get(task, _DEFAULT_SC_LENGTH), "pq_score": _PQ_LENGTH}
        values = {}
        for name, limit in lengths.items():
            cell = row[at[name]]
            try:
                values[name] = viescore_cell(cell, rule, limit)
            except ValueError as exc:
                bad = BadCell(str(path), line, name, repr(cell), str(exc))
                if not lenient:
                    raise bad.error() from None
                skipped.append(bad)
                values[name] = math.nan
        sc, pq = values["sc_score"], values["pq_score"]
        columns["task"].append(task)
        columns["model"].append(row[at["model"]])
        columns["uid"].append(row[at["uid"]])
        columns["SC"].append(sc)
        columns["PQ"].append(pq)
        columns["O"].append(math.sqrt(sc * pq))
    columns["failed"] = [False] * len(rows)
    frame = evaluator_frame(columns, missing, str(path), "viescore")
    frame.attrs["skipped_cells"] = skipped
    return frame
