"""Calibrating judges' scores against human ratings: ImagenHub's raters, or a CSV of labels.

:func:`calibrate_imagenhub` learns from stored judge outputs (VIEScore-style tables or cigeval
results) and the ImagenHub raters, on the official split when one is given (its held-out
images only report) or else seeded k-fold grouped by benchmark sample.
:func:`calibrate_labels` does the same with a cigeval results file and ``id,rating`` labels
on any numeric scale, grouped by prompt. Both run :class:`ScoreCalibrator` and return a
:class:`CalibrationResult` whose ``calibration`` is the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cigeval._caller import in_callers_words
from cigeval.calibration.file import Calibration
from cigeval.errors import InputError
from cigeval.meta.calibrate._sklearn import in_one_thread
from cigeval.meta.calibrate.heldout import heldout_figures
from cigeval.meta.calibrate.inputs import (
    JudgeSource,
    combined_binding,
    fingerprint,
    imagenhub_labels,
    input_sha256,
    prompt_group,
    read_judge_source,
    read_labels_csv,
    read_results_source,
)
from cigeval.meta.calibrate.pipeline import Items, Outcome, ScoreCalibrator
from cigeval.meta.calibrate.preferences import calibrate_preferences, is_preference_csv
from cigeval.meta.calibrate.result import CalibrationResult, created_now, version
from cigeval.meta.calibrate.splits import Fold, grouped_kfold, official_fold
from cigeval.meta.calibrate.steps import STEPS
from cigeval.meta.calibrate.task_fit import FitOptions

PROCEDURE = (
    "Stages measured on held-out items against the stage before (paired percentile "
    "bootstrap, {n_boot} resamples, 95%): best single judge chosen on the train side with "
    "the paper's min; learned aggregation of its sub-scores (min, softmin or non-negative "
    "weights, per task, chosen on the train side); a jury of every judge (non-negative least "
    "squares); an isotonic map to the human scale; a tie band for within-prompt comparisons. "
    "A stage whose gain's interval does not lie above zero is rejected. Intervals: "
    "conformalized quantile regression at level {level}, cross-fitted ({inner_k} folds "
    "grouped by prompt) on the train side, its quantile pair the level's own or a narrower "
    "one, whichever is narrowest out of fold once conformalized. Split: {split}."
)


def _items(
    sources: Sequence[JudgeSource],
    labels: Mapping[Any, float],
    describe: Any,
) -> Items:
    """The labelled items some source scored, in key order; ``describe(key)`` gives (task,
    cell, group)."""
    keys = sorted(k for k in labels if any(k in s.stock for s in sources))
    if not keys:
        given = in_callers_words("--scores", "scores=")
        raise InputError(f"no labelled item was scored by any {given} file (do the ids match?)")
    tasks, cells, groups = (
        np.asarray(col, dtype=object).astype(str)
        for col in zip(*(describe(k) for k in keys), strict=True)
    )
    stock = np.asarray([[s.stock.get(k, math.nan) for s in sources] for k in keys], dtype=float)
    stock = stock.reshape(len(keys), len(sources))
    subs = [[s.subs.get(k, np.zeros(0)) for k in keys] for s in sources]
    human = np.asarray([labels[k] for k in keys], dtype=float)
    return Items(list(keys), tasks, cells, groups, human, stock, subs)


def _steps(skip: Sequence[str]) -> list[str]:
    unknown = sorted(set(skip) - set(STEPS))
    if unknown:
        raise InputError(f"unknown step(s) {unknown}; the steps are {', '.join(STEPS)}")
    return [s for s in STEPS if s not in skip]


def _file(
    outcome: Outcome,
    sources: Sequence[JudgeSource],
    options: FitOptions,
    heldout: dict[str, Any],
    data: dict[str, Any],
    split: str,
    dimension: str,
    n_boot: int,
    abstain_width: float | None,
) -> Calibration:
    chosen = [sources[j] for j in outcome.final_judges]
    return Calibration(
        kind="scores",
        cigeval_version=version(),
        created=created_now(),
        binding=combined_binding(chosen),
        dimension=dimension,
        level=options.level,
        scale=options.scale,
        tasks=outcome.tasks,
        steps=outcome.steps,
        heldout=heldout,
        data={**data, "judges": [s.name for s in chosen], "split": split},
        procedure=PROCEDURE.format(
            n_boot=n_boot, level=options.level, inner_k=options.inner_k, split=split
        ),
        abstain_width=abstain_width,
    )


def _run(
    items: Items,
    folds: list[Fold],
    final_train: np.ndarray,
    options: FitOptions,
    skip: Sequence[str],
    n_boot: int,
) -> tuple[ScoreCalibrator, Outcome, dict[str, Any]]:
    calibrator = ScoreCalibrator(items, folds, final_train, options, _steps(skip), n_boot)
    outcome = calibrator.run()
    heldout = heldout_figures(calibrator, outcome)
    return calibrator, outcome, heldout


def _meta_average(
    items: Items,
    held: np.ndarray,
    values: np.ndarray,
    source_format: str,
    samples: Any,
    human: Any,
    dimension: str,
) -> float:
    """The held-out average exactly as ``cigeval meta imagenhub`` computes it."""
    import pandas as pd

    from cigeval.meta import meta_evaluate

    keys = [items.keys[i] for i in held]
    columns: dict[str, Any] = {"SC": np.nan, "PQ": np.nan, "O": np.nan, "failed": False}
    columns[dimension] = values[held]
    frame = pd.DataFrame(
        columns, index=pd.MultiIndex.from_tuples(keys, names=["task", "model", "uid"])
    )
    frame.attrs["source_format"] = source_format
    result = meta_evaluate(
        frame.dropna(subset=[dimension]), dimension=dimension, samples=samples, human=human
    )
    return math.nan if result.average is None else float(result.average)


@in_one_thread
def calibrate_imagenhub(
    scores: Sequence[str | Path],
    split: str | Path | None = None,
    *,
    dimension: str = "SC",
    level: float = 0.9,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    skip: Sequence[str] = (),
    all_models: bool = False,
    ratings_dir: str | Path | None = None,
    lenient: bool = False,
    abstain_width: float | None = None,
) -> CalibrationResult:
    """Calibrate stored judge outputs against the ImagenHub raters (see the module docstring).

    ``split``: the official ``test_40p.json`` (or a ``cigeval meta split`` file): fitted on
    its train side, reported on its test side; without one, ``folds``-fold seeded splits
    grouped by benchmark sample. The first ``--scores`` file is the judge whose win/tie/loss
    agreement is reported.
    """
    from cigeval.meta.split import load_split

    if not scores:
        raise InputError(f"give at least one {in_callers_words('--scores', 'scores=')} file")
    sources = [read_judge_source(p, dimension, lenient) for p in scores]
    labels, labels_sha = imagenhub_labels(dimension, all_models, ratings_dir)
    items = _items(sources, labels, lambda k: (k[0], k[1], f"{k[0]}/{k[2]}"))
    options = FitOptions(level=level, scale=(0.0, 1.0), seed=seed)
    samples = None
    if split is not None:
        loaded = load_split(split)
        fold = official_fold(items.keys, loaded)
        fold_list, final_train = [fold], fold.train
        samples = loaded.subset("test")
        split_text = f"{split} (fitted on its train side, reported on its test side)"
    else:
        fold_list = grouped_kfold(items.groups.tolist(), folds, seed)
        final_train = np.arange(len(items.keys))
        split_text = f"{folds}-fold, seed {seed}, grouped by benchmark sample; refitted on all"
    calibrator, outcome, heldout = _run(items, fold_list, final_train, options, skip, n_boot)
    from cigeval.meta.human import load_human_ratings

    held = calibrator.held
    source_format = "viescore" if str(scores[0]).lower().endswith((".tsv", ".tab")) else "cigeval"
    human = load_human_ratings(all_models=all_models, ratings_dir=ratings_dir)
    for name, values in (
        ("best_single", outcome.stock_best),
        ("calibrated", outcome.predictions.value),
    ):
        heldout[name] = _meta_average(items, held, values, source_format, samples, human, dimension)
    heldout["gain"] = heldout["calibrated"] - heldout["best_single"]
    heldout["best_single_judge"] = sorted({sources[b].name for b in outcome.best_single})
    parts = {f"scores:{s.name}": s.sha256 for s in sources}
    parts["labels:imagenhub"] = labels_sha
    if split is not None:
        parts["split"] = input_sha256(Path(split))
    data = {
        "fingerprint": fingerprint(parts),
        "sources": [{"name": s.name, "path": s.path, "sha256": s.sha256} for s in sources],
        "labels": {"kind": "imagenhub", "dimension": dimension, "sha256": labels_sha},
        "items": len(items.keys),
    }
    calibration = _file(
        outcome, sources, options, heldout, data, split_text, dimension, n_boot, abstain_width
    )
    got = outcome.predictions
    predictions = [
        {
            "task": items.keys[i][0],
            "model": items.keys[i][1],
            "uid": items.keys[i][2],
            "human": float(items.human[i]),
            "value": _number(got.value[i]),
            "interval": [_number(got.low[i]), _number(got.high[i])],
        }
        for i in held
    ]
    notes = [note for s in sources for note in s.notes]
    return CalibrationResult(calibration, heldout, predictions, notes)


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


@in_one_thread
def calibrate_labels(
    scores: Sequence[str | Path],
    labels: str | Path,
    *,
    level: float = 0.9,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    skip: Sequence[str] = (),
    group_by: str | None = None,
    abstain_width: float | None = None,
) -> CalibrationResult:
    """Calibrate cigeval results against a CSV of ``id,rating`` (any numeric scale):
    ``folds``-fold seeded splits grouped by prompt (:func:`prompt_group`), the file refitted
    on every label. Several results files are several judges of the same samples (a jury).
    A CSV of ``id_a,id_b,preference`` learns the judge's tie band instead
    (:func:`~cigeval.meta.calibrate.preferences.calibrate_preferences`)."""
    if is_preference_csv(labels):
        return calibrate_preferences(
            scores, labels, folds=folds, seed=seed, n_boot=n_boot, group_by=group_by
        )
    if not scores:
        given = in_callers_words("--scores", "scores=")
        raise InputError(f"give at least one {given} results file")
    sources = [read_results_source(p, key="id") for p in scores]
    wanted, labels_sha = read_labels_csv(labels)
    records = {k: r for s in reversed(sources) for k, r in s.records.items()}

    def describe(key: str) -> tuple[str, str, str]:
        record = records[key]
        cell = str(record.get("model", record.get("task")))
        return str(record.get("task")), cell, prompt_group(record, group_by)

    present = {k: v for k, v in wanted.items() if k in records}
    if len(present) < 10:
        raise InputError(
            f"only {len(present)} of the {len(wanted)} labelled id(s) have a scored record in "
            f"the {in_callers_words('--scores', 'scores=')} file(s); calibration needs at least 10"
        )
    items = _items(sources, present, describe)
    scale = (float(items.human.min()), float(items.human.max()))
    options = FitOptions(level=level, scale=scale, seed=seed)
    fold_list = grouped_kfold(items.groups.tolist(), folds, seed)
    split_text = f"{folds}-fold, seed {seed}, grouped by prompt; refitted on all labels"
    _, outcome, heldout = _run(items, fold_list, np.arange(len(items.keys)), options, skip, n_boot)
    heldout["best_single_judge"] = sorted({sources[b].name for b in outcome.best_single})
    parts = {f"scores:{s.name}": s.sha256 for s in sources}
    parts["labels"] = labels_sha
    data = {
        "fingerprint": fingerprint(parts),
        "sources": [{"name": s.name, "path": s.path, "sha256": s.sha256} for s in sources],
        "labels": {"kind": "csv", "path": str(labels), "sha256": labels_sha},
        "items": len(items.keys),
        "unlabelled_or_unscored": len(wanted) - len(present),
    }
    calibration = _file(
        outcome, sources, options, heldout, data, split_text, "score", n_boot, abstain_width
    )
    got = outcome.predictions
    predictions = [
        {
            "id": items.keys[i],
            "task": str(items.tasks[i]),
            "human": float(items.human[i]),
            "value": _number(got.value[i]),
            "interval": [_number(got.low[i]), _number(got.high[i])],
        }
        for i in range(len(items.keys))
    ]
    notes = [note for s in sources for note in s.notes]
    if len(wanted) > len(present):
        notes.append(f"{len(wanted) - len(present)} labelled id(s) have no scored record")
    return CalibrationResult(calibration, heldout, predictions, notes)
