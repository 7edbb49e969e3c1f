"""Malformed input cells: where they are, why they are refused, and the note when skipped.

Every meta-evaluation input is read strictly: a cell that does not hold what its format says
is an error naming the file, the line and the cell. With ``lenient`` the loaders leave such
cells out instead and list them as :class:`BadCell` in ``frame.attrs["skipped_cells"]``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cigeval._caller import in_callers_words
from cigeval.errors import InputError


@dataclass(frozen=True)
class BadCell:
    """A cell (or record field) that does not hold what its format says: where and why."""

    source: str
    line: int | None
    cell: str
    value: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.source} line {self.line}" if self.line is not None else self.source
        return f"{where}, {self.cell}: {self.value}: {self.reason}"

    def error(self) -> InputError:
        """The error raised for this cell when reading strictly."""
        lenient = in_callers_words("--lenient", "lenient=True")
        return InputError(f"{self} ({lenient} skips such cells)")


def check_number(value: float, low: float, high: float) -> str | None:
    """Why ``value`` is not a finite number in [low, high], or None when it is."""
    if not math.isfinite(value):
        return f"{value} is not a finite number"
    if not low <= value <= high:
        return f"{value:g} is outside [{low:g}, {high:g}]"
    return None


def skipped_note(skipped: Sequence[BadCell], shown: int = 3) -> list[str]:
    """A note naming the malformed cells a lenient read left out ([] when none were)."""
    if not skipped:
        return []
    listed = "; ".join(str(s) for s in skipped[:shown])
    more = f"; and {len(skipped) - shown} more" if len(skipped) > shown else ""
    lenient = in_callers_words("--lenient", "lenient=True")
    return [f"{lenient}: {len(skipped)} malformed cell(s) skipped: {listed}{more}"]


def read_tsv(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the (line number, cells) of each row of a tab-separated file."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, [])
            rows = [(reader.line_num, row) for row in reader if row]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc
    for line, row in rows:
        if len(row) != len(header):
            raise InputError(f"{path} line {line}: {len(row)} cells for {len(header)} columns")
    return header, rows


def read_table(
    path: Path, columns: tuple[str, ...], kind: str
) -> tuple[dict[str, int], list[tuple[int, list[str]]]]:
    """:func:`read_tsv` of a file that must hold ``columns``: each column's position and the
    rows, or an InputError saying the file is not ``kind`` (e.g. "a VIEScore-style table")."""
    header, rows = read_tsv(path)
    absent = [c for c in columns if c not in header]
    if absent:
        raise InputError(
            f"{path}: not {kind}, missing column(s) {absent} (expected {', '.join(columns)})"
        )
    return {name: header.index(name) for name in columns}, rows
