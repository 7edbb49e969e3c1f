"""What calibration learns from: judge outputs and human labels, read strictly.

A *judge source* is one file of one judge's outputs: a VIEScore-style table (the LMM's 0-10
score lists, read as :mod:`cigeval.meta.viescore_table` reads them) or a cigeval results file
(one run: records of several run fingerprints are refused, as ``cigeval meta`` refuses to pool
them). Each item gets the judge's own score (``stock``: what the table's ``min`` or the record
says) and its sub-scores on [0, 1]. Labels are the ImagenHub raters (the mean of their
ratings, as ``cigeval meta`` reads them) or a CSV of ``id,rating`` on any numeric scale.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from cigeval._caller import in_callers_words
from cigeval._digest import file_sha256
from cigeval.calibration.apply import judge_sub_scores, record_value
from cigeval.calibration.binding import Binding, binding_of_record
from cigeval.errors import InputError
from cigeval.meta.cells import BadCell, read_table
from cigeval.meta.frames import record_uid, task_id
from cigeval.meta.viescore_table import VIESCORE_COLUMNS, parse_score_list
from cigeval.results.record import value_at

#: The VIEScore table column holding each dimension's score lists.
_COLUMN = {"SC": "sc_score", "PQ": "pq_score"}


@dataclass
class JudgeSource:
    """One judge's outputs by item key: its own score and its sub-scores on [0, 1]."""

    name: str
    path: str
    sha256: str
    binding: Binding
    stock: dict[Any, float] = field(default_factory=dict)
    subs: dict[Any, np.ndarray] = field(default_factory=dict)
    records: dict[Any, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def input_sha256(path: Path) -> str:
    """The sha256 of an input file; InputError naming it when it cannot be read."""
    try:
        return file_sha256(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def read_viescore_source(
    path: str | Path, dimension: str = "SC", lenient: bool = False, name: str | None = None
) -> JudgeSource:
    """A VIEScore-style table (columns task, model, uid, sc_score, pq_score) as a judge
    source keyed by (task, model, uid): sub-scores = the list / 10, own score = its min.
    A malformed cell is an error naming file, line and cell, or with ``lenient`` a missing
    value (counted in the source's notes)."""
    if dimension not in _COLUMN:
        raise InputError(f"a VIEScore table holds SC and PQ lists, not {dimension!r}")
    path = Path(path)
    at, rows = read_table(path, VIESCORE_COLUMNS, "a VIEScore-style table")
    label = name or path.stem
    source = JudgeSource(
        label,
        str(path),
        input_sha256(path),
        Binding(judges=(f"table:{label}",), rubric="viescore"),
    )
    skipped = 0
    column = _COLUMN[dimension]
    for line, row in rows:
        key = (task_id(row[at["task"]]), row[at["model"]], row[at["uid"]])
        try:
            values = parse_score_list(row[at[column]])
        except ValueError as exc:
            if not lenient:
                bad = BadCell(str(path), line, column, repr(row[at[column]]), str(exc))
                raise bad.error() from None
            skipped += 1
            continue
        if values is None:
            continue
        subs = np.asarray(values, dtype=float) / 10.0
        source.subs[key] = subs
        source.stock[key] = float(subs.min())
    if skipped:
        option = in_callers_words("--lenient", "lenient=True")
        source.notes.append(f"{path}: {skipped} malformed {column} cell(s) left out ({option})")
    return source


def read_results_source(
    path: str | Path, key: str = "imagenhub", dimension: str = "score", name: str | None = None
) -> JudgeSource:
    """A cigeval results file (one run) as a judge source. ``key`` is ``imagenhub`` ((task,
    model, uid): the generator from ``model``, the sample from ``metadata.uid`` or ``id``) or
    ``id`` (the record id). The last record of an id counts; records that ended in error
    count as missing."""
    from cigeval.results import SkippedLine, last_record_per_id, read_records
    from cigeval.results.fingerprint import fingerprint_of

    path = Path(path)
    if not path.is_file():
        raise InputError(f"cannot read results file {path}: no such file")
    skipped: list[SkippedLine] = []
    records = last_record_per_id(read_records(path, skipped))
    runs = {fingerprint_of(r) for r in records}
    if len(runs) > 1:
        raise InputError(
            f"{path} holds records of {len(runs)} runs with different settings; calibrate one "
            "run at a time (a calibration is bound to one judge and its settings)"
        )
    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        raise InputError(f"{path}: no scored record to calibrate")
    source = JudgeSource(name or path.stem, str(path), input_sha256(path), binding_of_record(ok[0]))
    if skipped:
        source.notes.append(f"{path}: {len(skipped)} unreadable line(s) skipped")
    for record in ok:
        if key == "imagenhub":
            if "model" not in record:
                raise InputError(
                    f"{path}: record {record.get('id')!r} has no 'model' (the generator); "
                    "ImagenHub labels are per (task, generator, sample)"
                )
            item: Any = (task_id(str(record["task"])), str(record["model"]), record_uid(record))
        else:
            item = str(record["id"])
        value = record_value(record, dimension)
        if math.isnan(value):
            continue
        source.stock[item] = value
        source.subs[item] = judge_sub_scores(record, 1)[0]
        source.records[item] = record
    return source


def read_judge_source(
    path: str | Path, dimension: str = "SC", lenient: bool = False
) -> JudgeSource:
    """A VIEScore-style table (.tsv/.tab) or a cigeval results file keyed for ImagenHub."""
    if str(path).lower().endswith((".tsv", ".tab")):
        return read_viescore_source(path, dimension, lenient)
    return read_results_source(path, "imagenhub", dimension)


def imagenhub_labels(
    dimension: str = "SC", all_models: bool = False, ratings_dir: str | Path | None = None
) -> tuple[dict[tuple[str, str, str], float], str]:
    """The mean rater score of each ImagenHub image (as ``cigeval meta`` reads it) and the
    sha256 of the rating files."""
    from importlib import resources

    from cigeval.meta.human import load_human_ratings

    frame = load_human_ratings(all_models=all_models, ratings_dir=ratings_dir)
    labels: dict[tuple[str, str, str], float] = {}
    for key, value in frame[dimension].items():
        task, model, uid = cast(tuple[Any, Any, Any], key)
        if not math.isnan(value):
            labels[(str(task), str(model), str(uid))] = float(value)
    root: Any = (
        Path(ratings_dir)
        if ratings_dir is not None
        else resources.files("cigeval.data").joinpath("imagenhub_human_ratings")
    )
    digest = hashlib.sha256()
    for folder in sorted(root.iterdir(), key=lambda p: p.name):
        if folder.is_dir():
            for entry in sorted(folder.iterdir(), key=lambda p: p.name):
                digest.update(entry.name.encode() + b"\0" + entry.read_bytes())
    return labels, digest.hexdigest()


def labels_csv(path: Path) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """A labels CSV's header (lower-cased) and its rows that hold anything, each with its line
    number; InputError when the file cannot be read as text."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read labels file {path}: {exc}") from None
    reader = csv.reader(text.splitlines())
    header = [h.strip().lower() for h in next(reader, [])]
    rows = (
        (number, row)
        for number, row in enumerate(reader, start=2)
        if row and any(cell.strip() for cell in row)
    )
    return header, rows


def read_labels_csv(path: str | Path) -> tuple[dict[str, float], str]:
    """A CSV of ``id,rating`` (a header naming both; any numeric scale) and its sha256. A
    line that is not an id and a finite number is an error naming the line; an id given twice
    is an error."""
    path = Path(path)
    header, rows = labels_csv(path)
    if "id" not in header or "rating" not in header:
        raise InputError(f"{path} line 1: expected a header with 'id' and 'rating', got {header}")
    at_id, at_rating = header.index("id"), header.index("rating")
    labels: dict[str, float] = {}
    for number, row in rows:
        if len(row) <= max(at_id, at_rating):
            raise InputError(f"{path} line {number}: expected id and rating, got {row}")
        item, cell = row[at_id].strip(), row[at_rating].strip()
        try:
            value = float(cell)
        except ValueError:
            raise InputError(f"{path} line {number}: rating {cell!r} is not a number") from None
        if not math.isfinite(value):
            raise InputError(f"{path} line {number}: rating {cell!r} is not a finite number")
        if item in labels:
            raise InputError(f"{path} line {number}: id {item!r} is labelled twice")
        labels[item] = value
    if not labels:
        raise InputError(f"{path}: no labels")
    return labels, input_sha256(path)


def combined_binding(sources: list[JudgeSource]) -> Binding:
    """The binding of a calibration over several sources: their judges in order, and each
    other field where the sources agree (left unbound where they do not)."""
    first = sources[0].binding

    def common(name: str) -> Any:
        values = {getattr(s.binding, name) for s in sources}
        return values.pop() if len(values) == 1 else None

    judges = tuple(j for s in sources for j in s.binding.judges)
    return first.model_copy(
        update={
            "judges": judges,
            "rubric": common("rubric"),
            "method": common("method"),
            "aggregate": common("aggregate"),
            "prompt_set": common("prompt_set"),
        }
    )


def fingerprint(parts: Mapping[str, str]) -> str:
    """The data fingerprint: the sha256 of the inputs' names and hashes."""
    digest = hashlib.sha256()
    for name, value in sorted(parts.items()):
        digest.update(f"{name}\0{value}\n".encode())
    return digest.hexdigest()


def prompt_group(record: Mapping[str, Any], field: str | None = None) -> str:
    """The prompt group of a results record: ``field`` (a dotted path) when given, else
    ``metadata.uid``, else its text conditions, else its id; within its task."""
    task = str(record.get("task"))
    if field:
        value = value_at(record, field)
        if value is None:
            raise InputError(f"record {record.get('id')!r} has no {field!r} to group by")
        return f"{task}/{value}"
    metadata = record.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("uid") is not None:
        return f"{task}/{metadata['uid']}"
    conditions = record.get("conditions")
    if isinstance(conditions, Mapping) and conditions:
        return f"{task}/{json.dumps(conditions, sort_keys=True)}"
    return f"{task}/{record.get('id')}"
