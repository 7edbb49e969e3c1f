"""Calibrating scores: the learned steps in order, each kept only when it helps held-out.

Stages, each measured on the held-out side against the one before it (paired bootstrap):

1. the **best single judge** (chosen on the train side by its within-cell Spearman), with
   the paper's ``min``: the stock behaviour;
2. **aggregation** of that judge's sub-scores (per task: min, softmin or weighted);
3. a **jury** of every judge (only with several);
4. the **monotone map** to the human scale (held-out absolute error);
5. the **tie band** (held-out within-prompt win/tie/loss agreement).

A stage whose gain's interval does not lie above zero is rejected and the stage before it kept.
The kept chain is then fitted with its conformal intervals, reported on the held-out side
(coverage per task and overall), and fitted once more for the file: on the train side of an
official split (the file is what was measured), or on every item after k-fold (the figures
describe the procedure that made the file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from cigeval._caller import in_callers_words
from cigeval.calibration.file import StepReport, TaskCalibration
from cigeval.meta.calibrate.figures import (
    gated_step,
    grouped_ratios,
    paired_figures,
    ranking_average,
)
from cigeval.meta.calibrate.splits import Fold
from cigeval.meta.calibrate.steps import STEPS
from cigeval.meta.calibrate.task_fit import FitOptions, TaskData, fit_task, predict
from cigeval.meta.calibrate.ties import agreement, prompt_pairs


@dataclass
class Items:
    """Labelled items: key, task, correlation cell (generator), prompt group, human label,
    each judge's own score (n x judges) and sub-scores (per judge, per item)."""

    keys: list[Any]
    tasks: np.ndarray
    cells: np.ndarray
    groups: np.ndarray
    human: np.ndarray
    stock: np.ndarray
    subs: list[list[np.ndarray]]

    def task_data(self, task: str, judges: Sequence[int]) -> tuple[TaskData, np.ndarray]:
        """The items of one task as :class:`TaskData` (the given judges) and their indices."""
        where = np.flatnonzero(self.tasks == task)
        subs = []
        for j in judges:
            rows = [self.subs[j][i] for i in where]
            width = max((len(r) for r in rows), default=0)
            matrix = np.full((len(where), max(width, 1)), np.nan)
            for r, row in enumerate(rows):
                matrix[r, : len(row)] = row
            subs.append(matrix)
        data = TaskData(
            task,
            subs,
            self.stock[where][:, list(judges)],
            self.human[where],
            self.groups[where],
            self.cells[where],
        )
        return data, where


@dataclass
class Predictions:
    """Pooled held-out predictions of one fitted stage (NaN where an item was not held out)."""

    s: np.ndarray
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    band: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Predictions:
        """Predictions for ``n`` items, every one NaN (none held out yet)."""
        return cls(*(np.full(n, np.nan) for _ in range(5)))


@dataclass
class Outcome:
    """What calibrating found: the file's per-task functions, the steps, the held-out
    figures and predictions, and the best single judge."""

    tasks: dict[str, TaskCalibration]
    steps: list[StepReport]
    heldout: dict[str, Any]
    predictions: Predictions
    held: np.ndarray
    best_single: list[int]
    final_judges: tuple[int, ...]
    stock_best: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _fit_and_predict(
    items: Items, judges: Sequence[int], train: np.ndarray, test: np.ndarray, options: FitOptions
) -> tuple[dict[str, TaskCalibration], dict[str, Any], Predictions]:
    """Fit each task on ``train`` (global indices) and predict ``test``."""
    out = Predictions.empty(len(items.keys))
    fits: dict[str, TaskCalibration] = {}
    chosen: dict[str, Any] = {}
    for task in sorted(set(items.tasks[train].tolist())):
        data, where = items.task_data(task, judges)
        local_train = np.flatnonzero(np.isin(where, train))
        local_test = np.flatnonzero(np.isin(where, test))
        labelled = local_train[~np.isnan(data.human[local_train])]
        if len(labelled) < 3:
            continue
        fit = fit_task(data, labelled, options)
        fits[task], chosen[task] = fit.calibration, fit.chosen
        if len(local_test):
            got = predict(fit.calibration, data, local_test, options.scale)
            at = where[local_test]
            out.s[at], out.value[at] = got["s"], got["value"]
            out.low[at], out.high[at] = got["low"], got["high"]
            out.band[at] = fit.calibration.tie_band
    return fits, chosen, out


#: A single judge must score at least this share of the train items to be the best one (a
#: judge of one task only is no single judge for seven).
FULL_COVERAGE = 0.95


def _best_judge(items: Items, train: np.ndarray) -> int:
    """The judge whose own scores agree best with people on the train side (the meta average;
    the first on equal figures), among the judges that score nearly every train item (at
    least :data:`FULL_COVERAGE` of them; else those that score the most)."""
    scored = (~np.isnan(items.stock[train])).mean(axis=0)
    candidates = np.flatnonzero(scored >= min(FULL_COVERAGE, scored.max()))
    values = [
        ranking_average(
            items.human[train], [items.stock[train, j]], items.tasks[train], items.cells[train], 0
        )[0][0]
        for j in candidates
    ]
    finite = [(-np.inf if np.isnan(v) else v) for v in values]
    return int(candidates[int(np.argmax(finite))])


class _Staging:
    """Runs one stage over every fold and pools its held-out predictions."""

    def __init__(self, items: Items, folds: Sequence[Fold], options: FitOptions) -> None:
        self.items, self.folds, self.options = items, folds, options

    def run(
        self, judges_of: Callable[[int], tuple[int, ...]], **steps: Any
    ) -> tuple[Predictions, list[dict[str, Any]]]:
        pooled = Predictions.empty(len(self.items.keys))
        chosen = []
        options = replace(self.options, **steps)
        for k, fold in enumerate(self.folds):
            _, picked, got = _fit_and_predict(
                self.items, judges_of(k), fold.train, fold.test, options
            )
            for name in ("s", "value", "low", "high", "band"):
                getattr(pooled, name)[fold.test] = getattr(got, name)[fold.test]
            chosen.append(picked)
        return pooled, chosen


def _gain_report(
    step: str,
    before: dict[str, Any],
    after: dict[str, Any],
    gain: dict[str, Any],
    what: str,
    stock: str,
    chosen: dict[str, Any] | None = None,
) -> StepReport:
    shown = gain["interval"]
    text = (
        f"held-out {what}: {before['value']:.4f} -> {after['value']:.4f}, gain "
        f"{gain['value']:+.4f} [{shown[0]:+.4f}, {shown[1]:+.4f}]"
        if shown is not None and gain["value"] is not None
        else f"held-out {what}: no interval could be drawn"
    )
    return gated_step(step, what, (before, after, gain), measured=text, stock=stock, chosen=chosen)


def _left_out() -> str:
    """Why a step the caller skipped was not tried, in the caller's words."""
    return f"left out ({in_callers_words('--skip', 'skip=')})"


def _not_tried(step: str, why: str) -> StepReport:
    return StepReport(step=step, kept=False, reason=f"not tried: {why}")


class ScoreCalibrator:
    """Runs the stages of the module docstring over ``folds`` and fits the file.

    ``final_train`` is where the file's functions are fitted; ``steps`` the learned steps
    to try; ``n_boot``/``seed`` the bootstrap behind every interval.
    """

    def __init__(
        self,
        items: Items,
        folds: Sequence[Fold],
        final_train: np.ndarray,
        options: FitOptions,
        steps: Sequence[str] = STEPS,
        n_boot: int = 1000,
    ) -> None:
        self.items, self.folds, self.final_train = items, list(folds), final_train
        self.options, self.steps, self.n_boot = options, set(steps), n_boot
        self.held = np.unique(np.concatenate([f.test for f in self.folds]))
        self.stage = _Staging(items, self.folds, options)

    def _ranking(self, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        h = self.held
        i = self.items
        return ranking_average(
            i.human[h],
            [a[h] for a in arrays],
            i.tasks[h],
            i.cells[h],
            self.n_boot,
            self.options.seed,
        )

    def _ranking_gain(self, before: np.ndarray, after: np.ndarray) -> tuple[dict, dict, dict]:
        return paired_figures(*self._ranking([before, after]))

    def _ranking_step(
        self,
        step: str,
        stock: str,
        current: np.ndarray,
        judges_of: Callable[[int], tuple[int, ...]],
        **steps: Any,
    ) -> tuple[StepReport, np.ndarray]:
        """Run a stage judged by ranking agreement (aggregation, a jury) over the folds
        against the held-out scores so far (``current``); its report, and the scores to go on
        from: the stage's where it is kept, else ``current``."""
        got, chosen = self.stage.run(judges_of, **steps)
        before, after, gain = self._ranking_gain(current, got.s)
        report = _gain_report(
            step,
            before,
            after,
            gain,
            "SC average (within-cell Spearman)",
            stock,
            {"per_fold": chosen},
        )
        return report, got.s if report.kept else current

    def _item_figures(
        self, numerators: Sequence[np.ndarray], counts: np.ndarray, groups: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        return grouped_ratios(numerators, counts, groups, self.n_boot, self.options.seed)

    def wtl(
        self, values: np.ndarray, bands: np.ndarray | float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per held-out within-prompt pair: agreement, counted, group."""
        h = self.held
        pairs = prompt_pairs(self.items.groups[h], self.items.cells[h])
        if not len(pairs):
            return np.zeros(0), np.zeros(0), np.zeros(0, dtype=str)
        band_of = np.broadcast_to(np.asarray(bands, float), (len(self.items.keys),))[h]
        human, vals = self.items.human[h], values[h]
        agree = np.zeros(len(pairs), bool)
        counted = np.zeros(len(pairs), bool)
        for band in np.unique(np.nan_to_num(band_of[pairs[:, 0]])):
            rows = np.nan_to_num(band_of[pairs[:, 0]]) == band
            got, ok = agreement(human, vals, pairs[rows], float(band))
            agree[rows], counted[rows] = got, ok
        return agree.astype(float), counted.astype(float), self.items.groups[h][pairs[:, 0]]

    def run(self) -> Outcome:
        """Every stage, the gates, the held-out figures and the file's functions."""
        items, n = self.items, len(self.items.keys)
        judges = items.stock.shape[1]
        best = [_best_judge(items, fold.train) for fold in self.folds]
        stock_best = np.full(n, np.nan)
        for fold, b in zip(self.folds, best, strict=True):
            stock_best[fold.test] = items.stock[fold.test, b]
        reports: list[StepReport] = []
        point = {"map": False, "intervals": False, "tie_band": False}
        current = stock_best
        # 2. aggregation of the best judge's sub-scores
        keep_aggregation = False
        if "aggregation" not in self.steps:
            reports.append(_not_tried("aggregation", _left_out()))
        elif max(len(s) for j in range(judges) for s in items.subs[j]) < 2:
            reports.append(_not_tried("aggregation", "the judges give one score per item"))
        else:
            report, current = self._ranking_step(
                "aggregation",
                "the paper's min",
                current,
                lambda k: (best[k],),
                aggregation=True,
                jury=False,
                **point,
            )
            reports.append(report)
            keep_aggregation = report.kept
        # 3. jury over every judge
        keep_jury = False
        if judges < 2:
            reports.append(_not_tried("jury", "one judge"))
        elif "jury" not in self.steps:
            reports.append(_not_tried("jury", _left_out()))
        else:
            report, current = self._ranking_step(
                "jury",
                "the best single judge",
                current,
                lambda k: tuple(range(judges)),
                aggregation=keep_aggregation,
                jury=True,
                **point,
            )
            reports.append(report)
            keep_jury = report.kept

        def chain_judges(k: int) -> tuple[int, ...]:
            return tuple(range(judges)) if keep_jury else (best[k],)

        # 4. the monotone map
        keep_map = False
        if "map" not in self.steps:
            reports.append(_not_tried("map", _left_out()))
        else:
            got, _ = self.stage.run(
                chain_judges,
                aggregation=keep_aggregation,
                jury=keep_jury,
                map=True,
                intervals=False,
                tie_band=False,
            )
            low_end, high_end = self.options.scale
            h = self.held
            raw_error = np.abs(items.human[h] - np.clip(got.s[h], low_end, high_end))
            mapped_error = np.abs(items.human[h] - got.value[h])
            ok = ~np.isnan(raw_error) & ~np.isnan(mapped_error)
            values, draws = self._item_figures(
                [np.where(ok, raw_error, 0), np.where(ok, mapped_error, 0)],
                ok.astype(float),
                items.groups[h],
            )
            before, after, gain = paired_figures(values, draws, lower_is_better=True)
            report = _gain_report(
                "map",
                before,
                after,
                gain,
                "mean absolute error to the human label (gain = error removed)",
                "the score as it is",
            )
            reports.append(report)
            keep_map = report.kept
        # the kept chain with its intervals and band
        final, chosen = self.stage.run(
            chain_judges,
            aggregation=keep_aggregation,
            jury=keep_jury,
            map=keep_map,
            intervals=True,
            tie_band="tie_band" in self.steps,
        )
        # 5. the tie band
        keep_band = False
        if "tie_band" not in self.steps:
            reports.append(_not_tried("tie_band", _left_out()))
        else:
            agree0, counted, groups = self.wtl(final.value, 0.0)
            agree1, _, _ = self.wtl(final.value, final.band)
            if not counted.sum():
                reports.append(_not_tried("tie_band", "no prompt has two held-out items"))
            else:
                values, draws = self._item_figures([agree0, agree1], counted, groups)
                before, after, gain = paired_figures(values, draws)
                report = _gain_report(
                    "tie_band",
                    before,
                    after,
                    gain,
                    "within-prompt win/tie/loss agreement",
                    "exact ties only",
                    {"per_fold": [{t: c.get("tie_band") for t, c in f.items()} for f in chosen]},
                )
                reports.append(report)
                keep_band = report.kept
        if not keep_band:
            final.band[:] = 0.0
        kept = {"aggregation": keep_aggregation, "jury": keep_jury, "map": keep_map}
        final_judges = (
            tuple(range(judges)) if keep_jury else (_best_judge(items, self.final_train),)
        )
        options = replace(
            self.options,
            aggregation=keep_aggregation,
            jury=keep_jury,
            map=keep_map,
            intervals=True,
            tie_band=keep_band,
        )
        tasks, _, _ = _fit_and_predict(
            items, final_judges, self.final_train, np.zeros(0, dtype=int), options
        )
        return Outcome(
            tasks=tasks,
            steps=reports,
            heldout={"kept": {**kept, "tie_band": keep_band}},
            predictions=final,
            held=self.held,
            best_single=best,
            final_judges=final_judges,
            stock_best=stock_best,
        )

    def first_judge_wtl(self, outcome: Outcome) -> tuple[Predictions, bool]:
        """Held-out values of the first judge's own chain (its aggregation, map and band as
        kept), for its win/tie/loss agreement; and whether the band is applied."""
        kept = outcome.heldout["kept"]
        if not kept["jury"] and all(b == 0 for b in outcome.best_single):
            return outcome.predictions, kept["tie_band"]
        got, _ = self.stage.run(
            lambda k: (0,),
            aggregation=kept["aggregation"],
            jury=False,
            map=kept["map"],
            intervals=False,
            tie_band=kept["tie_band"],
        )
        return got, kept["tie_band"]
