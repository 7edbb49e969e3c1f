"""Calibrating a judge's ties on your own pairwise labels: ``calibrate labels`` with a CSV of
``id_a,id_b,preference``.

Each row names two scored samples (record ids of the ``--scores`` results file) and which one
people preferred: ``A`` (the first), ``B`` or ``tie`` (GenAI-Bench's ``A>B``, ``B>A``,
``A=B=Good``, ``A=B=Bad`` and ``A=B`` are read too; both kinds of tie are a tie here). The
judge prefers the candidate with the higher score, or ties when the two scores are closer
than the **tie band**. Over seeded k-fold splits grouped by prompt, each train side chooses
the band with the best three-way accuracy (win, tie, loss), the held-out side counts it
against the stock rule (ties only for equal scores), and the band is kept when the paired
bootstrap interval of the held-out gain lies above zero.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cigeval._caller import in_callers_words
from cigeval.calibration.file import ANY_TASK, Calibration, TaskCalibration
from cigeval.errors import InputError
from cigeval.meta.agreement import outcome
from cigeval.meta.calibrate._sklearn import in_one_thread
from cigeval.meta.calibrate.figures import gated_step, grouped_ratios, paired_figures
from cigeval.meta.calibrate.inputs import (
    fingerprint,
    labels_csv,
    prompt_group,
    read_results_source,
)
from cigeval.meta.calibrate.result import CalibrationResult, created_now, version
from cigeval.meta.calibrate.splits import grouped_kfold
from cigeval.meta.calibrate.ties import candidate_bands

#: What a preference cell may say, and the outcome it means (1: A, -1: B, 0: a tie).
PREFERENCES = {
    "a": 1,
    "a>b": 1,
    "b": -1,
    "b>a": -1,
    "tie": 0,
    "a=b": 0,
    "a=b=good": 0,
    "a=b=bad": 0,
}


def is_preference_csv(path: str | Path) -> bool:
    """Whether a labels CSV holds pairs (a header with id_a, id_b and preference)."""
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as handle:
            header = [h.strip().lower() for h in next(csv.reader(handle), [])]
    except (OSError, UnicodeDecodeError):
        return False
    return {"id_a", "id_b", "preference"} <= set(header)


def read_preferences(path: str | Path) -> tuple[list[tuple[str, str, int]], str]:
    """The (id_a, id_b, outcome) rows of a preferences CSV and the file's sha256; a row that
    is not two ids and a known preference is an error naming the line."""
    from cigeval._digest import file_sha256

    path = Path(path)
    header, lines = labels_csv(path)
    at = {name: header.index(name) for name in ("id_a", "id_b", "preference") if name in header}
    if len(at) < 3:
        raise InputError(f"{path} line 1: expected a header with id_a, id_b and preference")
    rows = []
    for number, row in lines:
        if len(row) <= max(at.values()):
            raise InputError(f"{path} line {number}: expected id_a, id_b and preference")
        said = row[at["preference"]].strip().lower()
        if said not in PREFERENCES:
            raise InputError(
                f"{path} line {number}: preference {row[at['preference']]!r} is not A, B or tie"
            )
        rows.append((row[at["id_a"]].strip(), row[at["id_b"]].strip(), PREFERENCES[said]))
    if not rows:
        raise InputError(f"{path}: no labelled pair")
    return rows, file_sha256(path)


def _best_band(difference: np.ndarray, human: np.ndarray) -> float:
    """The band with the best three-way accuracy (the smallest among equals)."""
    candidates = candidate_bands(np.abs(difference))
    scores = [float((outcome(difference, band) == human).mean()) for band in candidates]
    return candidates[int(np.argmax(scores))]


@in_one_thread
def calibrate_preferences(
    scores: Sequence[str | Path],
    labels: str | Path,
    *,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    group_by: str | None = None,
    **_: Any,
) -> CalibrationResult:
    """Learn a judge's tie band from pairwise labels (see the module docstring)."""
    if len(scores) != 1:
        one = in_callers_words("one --scores results file", "scores=[one results file]")
        raise InputError(f"pairwise labels calibrate one judge: give {one}")
    source = read_results_source(scores[0], key="id")
    rows, sha = read_preferences(labels)
    usable = [(a, b, h) for a, b, h in rows if a in source.stock and b in source.stock]
    if len(usable) < 10:
        raise InputError(
            f"only {len(usable)} of the {len(rows)} labelled pair(s) have both samples scored "
            f"in the {in_callers_words('--scores', 'scores=')} file; calibration needs at least 10"
        )
    difference = np.asarray([source.stock[a] - source.stock[b] for a, b, _ in usable])
    human = np.asarray([h for _, _, h in usable])
    groups = [prompt_group(source.records[a], group_by) for a, _, _ in usable]
    before = np.full(len(usable), np.nan)
    after = np.full(len(usable), np.nan)
    bands = []
    for fold in grouped_kfold(groups, folds, seed):
        band = _best_band(difference[fold.train], human[fold.train])
        bands.append(band)
        before[fold.test] = outcome(difference[fold.test], 0.0) == human[fold.test]
        after[fold.test] = outcome(difference[fold.test], band) == human[fold.test]
    values, draws = grouped_ratios([before, after], np.ones(len(usable)), groups, n_boot, seed)
    fig_before, fig_after, gain = paired_figures(values, draws)
    shown = gain["interval"] or [math.nan, math.nan]
    step = gated_step(
        "tie_band",
        "three-way accuracy",
        (fig_before, fig_after, gain),
        measured=f"held-out three-way accuracy: {values[0]:.4f} -> {values[1]:.4f}, gain "
        f"{values[1] - values[0]:+.4f} [{shown[0]:+.4f}, {shown[1]:+.4f}]",
        stock="exact ties only",
        chosen={"band_per_fold": [round(b, 4) for b in bands]},
    )
    band = _best_band(difference, human) if step.kept else 0.0
    heldout = {
        "pairs": len(usable),
        "accuracy_before": values[0],
        "accuracy_after": values[1],
        "gain": values[1] - values[0],
        "gain_interval": gain["interval"],
        "human_ties": float((human == 0).mean()),
        "intervals": {
            "accuracy_before": fig_before["interval"],
            "accuracy_after": fig_after["interval"],
        },
    }
    calibration = Calibration(
        kind="scores",
        cigeval_version=version(),
        created=created_now(),
        binding=source.binding,
        tasks={
            ANY_TASK: TaskCalibration(judges=[{"rule": "min"}], tie_band=band, n_train=len(usable))
        },
        steps=[step],
        heldout=heldout,
        data={
            "fingerprint": fingerprint({"scores": source.sha256, "labels": sha}),
            "sources": [{"name": source.name, "path": source.path, "sha256": source.sha256}],
            "labels": {"kind": "pairs", "path": str(labels), "sha256": sha},
            "items": len(usable),
            "split": f"{folds}-fold, seed {seed}, grouped by prompt; refitted on all pairs",
        },
        procedure=(
            "Tie band: two scores closer than the band are a tie. Chosen for the best "
            "three-way accuracy on each train side (0 and quantiles of the score "
            "differences), counted on the held-out side against exact ties; percentile "
            f"bootstrap of prompt groups, {n_boot} resamples, 95%."
        ),
    )
    predictions = [
        {"id_a": a, "id_b": b, "human": int(h), "right_before": bool(r0), "right_after": bool(r1)}
        for (a, b, h), r0, r1 in zip(usable, before, after, strict=True)
    ]
    notes = list(source.notes)
    if len(rows) > len(usable):
        notes.append(f"{len(rows) - len(usable)} labelled pair(s) lack a scored sample; left out")
    return CalibrationResult(calibration, heldout, predictions, notes)
