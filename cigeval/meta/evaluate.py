"""Correlating an evaluator (or the human raters themselves) with the ImagenHub human ratings.

Correlations are computed per (task, generator model) on exactly the images both sides have,
then averaged over a task's generators and over tasks (see :mod:`cigeval.meta.average`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from cigeval.errors import InputError
from cigeval.meta.agreement import raters_within_prompt, within_prompt_agreement
from cigeval.meta.average import (
    AUTO,
    Averaging,
    NanPolicy,
    Rounding,
    average_correlations,
    average_tasks,
    resolve_rounding,
    round_value,
)
from cigeval.meta.cells import skipped_note
from cigeval.meta.frames import run_fingerprint
from cigeval.meta.human import DIMENSIONS, load_human_ratings, rater_matrix
from cigeval.meta.result import COVERAGE_COLUMNS, MetaResult
from cigeval.meta.selection import Samples, selection_of
from cigeval.stats import (
    MIN_SAMPLES,
    Method,
    bootstrap_indices,
    correlation,
    percentile_interval,
    rowwise_correlation,
    undefined_reason,
)
from cigeval.tasks.ids import PAPER_TASK_ORDER

# One cell's bootstrap: resampled index rows (n_boot x n) -> one value per resample.
_BootCell = Callable[[np.ndarray], np.ndarray]


def _restrict(
    frame: pd.DataFrame, samples: Samples | None, tasks: Iterable[str] | None = None
) -> pd.DataFrame:
    if tasks is not None:
        frame = frame[frame.index.get_level_values("task").isin(list(tasks))]
    if samples is None:
        return frame
    selection = selection_of(samples)
    keys = zip(
        frame.index.get_level_values("task"),
        frame.index.get_level_values("model"),
        frame.index.get_level_values("uid"),
        strict=True,
    )
    return frame[[selection.keeps(*k) for k in keys]]


def _check_options(dimension: str, averaging: str, method: str) -> None:
    if dimension not in DIMENSIONS:
        raise InputError(f"unknown dimension {dimension!r}; choose one of {DIMENSIONS}")
    if averaging not in ("paper", "fisher_z"):
        raise InputError(f"unknown averaging {averaging!r}; use 'paper' or 'fisher_z'")
    if method not in ("spearman", "pearson", "kendall"):
        raise InputError(f"unknown method {method!r}; use spearman, pearson or kendall")


def coverage_table(human: pd.DataFrame, scores: pd.DataFrame, dimension: str) -> pd.DataFrame:
    """Per (task, model): how many images each side has and which of them can be correlated.

    ``human_only``: rated by people, never scored; ``evaluator_only``: scored, no human rating;
    ``failed``: the evaluation ended in an error; ``missing``: scored without a value for this
    dimension; ``partial``: (combined sources) failed or missing because only some sources
    scored it; ``used``: both sides have a value.
    """
    h_keys = human.index
    both = h_keys.intersection(scores.index)
    in_both = scores.loc[both]
    has_value = in_both[dimension].notna()
    failed = in_both["failed"].astype(bool) & ~has_value
    missing = ~has_value & ~failed
    n_sources = scores.attrs.get("sources")
    count_col = f"n_{dimension}"
    if n_sources and count_col in in_both:
        partial = ~has_value & (in_both[count_col] > 0) & (in_both[count_col] < n_sources)
    else:
        partial = pd.Series(False, index=in_both.index)

    def by_cell(index: pd.Index, mask: pd.Series | None = None) -> pd.Series:
        chosen = index if mask is None else index[mask.to_numpy()]
        keys = pd.MultiIndex.from_arrays(
            [chosen.get_level_values(0), chosen.get_level_values(1)], names=["task", "model"]
        )
        return pd.Series(1, index=keys).groupby(level=["task", "model"]).sum()

    table = pd.DataFrame(
        {
            "n_human": by_cell(h_keys),
            "n_evaluator": by_cell(scores.index),
            "human_only": by_cell(h_keys.difference(scores.index)),
            "evaluator_only": by_cell(scores.index.difference(h_keys)),
            "failed": by_cell(in_both.index, failed),
            "missing": by_cell(in_both.index, missing),
            "partial": by_cell(in_both.index, partial),
            "used": by_cell(in_both.index, has_value),
        }
    )
    table = table.reindex(columns=list(COVERAGE_COLUMNS)).fillna(0).astype(int)
    table.index.names = ["task", "model"]
    return _paper_sorted(table)


def _paper_sorted(frame: pd.DataFrame) -> pd.DataFrame:
    rank = {t: i for i, t in enumerate(PAPER_TASK_ORDER)}
    order = sorted(frame.index, key=lambda k: (rank.get(k[0], len(rank)), k[0], k[1]))
    return frame.loc[order]


def _bootstrap(
    cells: dict[tuple[str, str], tuple[int, _BootCell]],
    averaging: Averaging,
    nan_policy: NanPolicy,
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    draws = {}
    for key in sorted(cells):
        n, statistic = cells[key]
        draws[key] = statistic(bootstrap_indices(n, n_boot, rng)) if n else np.full(n_boot, np.nan)
    tasks = [t for t in PAPER_TASK_ORDER if any(k[0] == t for k in cells)]
    tasks += sorted({k[0] for k in cells} - set(tasks))
    task_draws = {}
    for task in tasks:
        stacked = np.column_stack([draws[k] for k in draws if k[0] == task])
        task_draws[task] = np.array(
            [average_correlations(row, averaging, nan_policy) for row in stacked]
        )
    by_task = np.column_stack([task_draws[t] for t in tasks])
    average = np.array([average_correlations(row, averaging, nan_policy) for row in by_task])

    def interval(values: np.ndarray) -> list[float] | None:
        low, high = percentile_interval(values, level)
        return None if np.isnan(low) else [low, high]

    return {
        "level": level,
        "n_boot": n_boot,
        "seed": seed,
        "tasks": {t: interval(v) for t, v in task_draws.items()},
        "average": interval(average),
    }


def _pair_statistic(x: np.ndarray, y: np.ndarray, method: Method) -> _BootCell:
    def statistic(idx: np.ndarray) -> np.ndarray:
        return rowwise_correlation(x[idx], y[idx], method)

    return statistic


def meta_evaluate(
    scores: pd.DataFrame,
    dimension: str = "SC",
    method: Method = "spearman",
    averaging: Averaging = "paper",
    round_to: int | str | Rounding | None = AUTO,
    nan_policy: NanPolicy = "propagate",
    samples: Samples | None = None,
    all_models: bool = False,
    human: pd.DataFrame | None = None,
    n_boot: int = 0,
    seed: int = 0,
    level: float = 0.95,
    evaluator: str = "evaluator",
    tasks: Iterable[str] | None = None,
) -> MetaResult:
    """Correlate an evaluator frame with the human ratings, per (task, model), and average.

    ``scores`` is an evaluator frame (:func:`cigeval.meta.load_scores`, or a combination of
    several from :func:`cigeval.meta.combine_scores`) of one run: a frame holding records of
    several run fingerprints is refused (split it with :func:`cigeval.meta.split_runs`).
    ``round_to='auto'`` keeps the decimals the published tables kept with ``paper`` averaging
    (:func:`cigeval.meta.average.paper_rounding`; none with ``fisher_z``); a number keeps that
    many at every step, None rounds nothing. ``samples`` restricts both sides to some benchmark
    samples or images (a split); ``tasks`` to some tasks (then no average over tasks is given
    unless all seven are kept). ``n_boot > 0`` adds percentile bootstrap intervals of the task
    values and the average (images resampled within each cell, seeded).
    """
    _check_options(dimension, averaging, method)
    fingerprint = run_fingerprint(scores)
    rounding = resolve_rounding(round_to, averaging, scores.attrs.get("source_format"))
    human = load_human_ratings(all_models=all_models) if human is None else human
    human = _restrict(human, samples, tasks)
    scores = _restrict(scores, samples, tasks)
    coverage = coverage_table(human, scores, dimension)
    evaluated = scores[[dimension]].rename(columns={dimension: f"{dimension}_eval"})
    joined = human[[dimension]].join(evaluated, how="inner").dropna()
    groups = dict(list(joined.groupby(level=["task", "model"])))
    rows: dict[tuple[str, str], tuple[float, int, str]] = {}
    cells: dict[tuple[str, str], tuple[int, _BootCell]] = {}
    for group_key, _ in human.groupby(level=["task", "model"]):
        key = (str(group_key[0]), str(group_key[1]))
        cell = groups.get(group_key, joined.iloc[:0])
        x = cell[dimension].to_numpy(dtype=float)
        y = cell[f"{dimension}_eval"].to_numpy(dtype=float)
        reason = undefined_reason(x, y, MIN_SAMPLES) or ""
        rows[key] = (correlation(x, y, method), len(x), reason)
        cells[key] = (len(x), _pair_statistic(x, y, method))
    per_model = _per_model_frame(rows)
    ties = within_prompt_agreement(
        human[dimension], scores[dimension], n_boot=n_boot, seed=seed, level=level
    )
    task_values, average = average_tasks(
        per_model["rho"], averaging, rounding, nan_policy, PAPER_TASK_ORDER
    )
    ci = _bootstrap(cells, averaging, nan_policy, n_boot, seed, level) if n_boot > 0 else None
    notes = []
    partial = tasks is not None and set(task_values) != set(PAPER_TASK_ORDER)
    if partial:
        notes.append(
            f"correlated on {len(task_values)} of the {len(PAPER_TASK_ORDER)} tasks; no average "
            "over tasks (it would not compare with a seven-task average)"
        )
        if ci is not None:
            ci["average"] = None
    return MetaResult(
        evaluator,
        dimension,
        method,
        averaging,
        rounding,
        nan_policy,
        task_values,
        None if partial else average,
        per_model,
        coverage,
        ci,
        notes,
        fingerprint,
        ties,
    )


def _per_model_frame(rows: dict[tuple[str, str], tuple[float, int, str]]) -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples(list(rows), names=["task", "model"])
    frame = pd.DataFrame(list(rows.values()), index=index, columns=["rho", "n", "undefined"])
    return _paper_sorted(frame)


def human_baseline(
    dimension: str = "SC",
    method: Method = "spearman",
    averaging: Averaging = "paper",
    round_to: int | str | Rounding | None = AUTO,
    nan_policy: NanPolicy = "propagate",
    samples: Samples | None = None,
    all_models: bool = False,
    n_boot: int = 0,
    seed: int = 0,
    level: float = 0.95,
    ratings_dir: str | Path | None = None,
    lenient: bool = False,
) -> MetaResult:
    """How well one person agrees with the others: the human-vs-human row of the tables.

    For each (task, model), each rater is correlated with the mean of the other two; the three
    values are averaged with the same ``averaging`` (so ``paper`` gives tanh(mean rho) per
    generator), then over generators and tasks as for any evaluator. With ``paper`` averaging
    and the default ``round_to='auto'`` (4 decimals kept at each step, as published) this
    reproduces the published human row (0.4700 average for SC). ``ratings_dir`` reads rating
    files laid out as the shipped ones instead; ``lenient`` skips malformed cells (see
    :func:`cigeval.meta.load_rater_ratings`), and an image missing a rater is left out.
    """
    _check_options(dimension, averaging, method)
    rounding = resolve_rounding(round_to, averaging, "human")
    full = rater_matrix(dimension, all_models=all_models, ratings_dir=ratings_dir, lenient=lenient)
    matrix = _restrict(full, samples).dropna()
    rows: dict[tuple[str, str], tuple[float, int, str]] = {}
    cells: dict[tuple[str, str], tuple[int, _BootCell]] = {}
    for group_key, block in matrix.groupby(level=["task", "model"]):
        key = (str(group_key[0]), str(group_key[1]))
        ratings = block.to_numpy(dtype=float)
        raters = ratings.shape[1]
        rest = [np.delete(ratings, r, axis=1).mean(axis=1) for r in range(raters)]
        values = [
            round_value(correlation(ratings[:, r], rest[r], method), rounding.correlations)
            for r in range(raters)
        ]
        reasons = {undefined_reason(ratings[:, r], rest[r]) for r in range(raters)} - {None}
        rows[key] = (
            round_value(average_correlations(values, averaging, nan_policy), rounding.averages),
            len(ratings),
            "; ".join(sorted(str(r) for r in reasons)) if any(np.isnan(values)) else "",
        )

        def statistic(idx: np.ndarray, ratings: np.ndarray = ratings) -> np.ndarray:
            per = [
                rowwise_correlation(
                    ratings[:, r][idx], np.delete(ratings, r, axis=1).mean(axis=1)[idx], method
                )
                for r in range(ratings.shape[1])
            ]
            stacked = np.column_stack(per)
            return np.array([average_correlations(v, averaging, nan_policy) for v in stacked])

        cells[key] = (len(ratings), statistic)
    per_model = _per_model_frame(rows)
    # each generator's value is already a rounded average over raters
    tasks, average = average_tasks(
        per_model["rho"], averaging, Rounding(None, rounding.averages), nan_policy, PAPER_TASK_ORDER
    )
    counts = pd.Series({k: n for k, (_, n, _) in rows.items()})
    counts.index.names = ["task", "model"]
    coverage = pd.DataFrame({c: 0 for c in COVERAGE_COLUMNS}, index=counts.index)
    coverage["n_human"] = coverage["n_evaluator"] = coverage["used"] = counts
    ci = _bootstrap(cells, averaging, nan_policy, n_boot, seed, level) if n_boot > 0 else None
    notes = ["each rater vs the mean of the other raters, averaged per generator first"]
    incomplete = len(_restrict(full, samples)) - len(matrix)
    if incomplete:
        notes.append(f"{incomplete} image(s) without a usable rating from every rater left out")
    notes.extend(skipped_note(full.attrs.get("skipped_cells", [])))
    return MetaResult(
        "human raters",
        dimension,
        method,
        averaging,
        rounding,
        nan_policy,
        tasks,
        average,
        per_model,
        _paper_sorted(coverage),
        ci,
        notes,
        tie_agreement=raters_within_prompt(matrix),
    )
