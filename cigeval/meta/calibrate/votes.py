"""Calibrating pairwise judges on GenAI-Bench-style votes: a learned four-way jury.

The file holds one JSON object per pair (the layout of the shipped GenAI-Bench votes):
``idx``, the text condition (``prompt``; or ``source_prompt``, ``target_prompt``,
``instruct_prompt``), ``human_vote`` and ``votes`` (judge -> ``A>B``, ``B>A``, ``A=B=Good``,
``A=B=Bad`` or null). Accuracy is GenAI-Bench's four-way accuracy: a judge is right when its
label is the human's; no usable vote counts as wrong.

Over seeded splits (60/40 by default), grouped by text condition so a prompt never straddles
the sides: the **best single judge** is the one most accurate on the train side; the
**jury** is a multinomial logistic model over every judge's one-hot vote (its regularisation
chosen by grouped cross-validation on the train side, by four-way accuracy, log loss breaking
ties); both are counted on the held-out side.
The jury is kept when the paired bootstrap interval of its mean held-out gain lies above zero;
the file's model is then fitted on every pair.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cigeval._digest import file_sha256
from cigeval.calibration.binding import Binding
from cigeval.calibration.file import Calibration, VotesCalibration
from cigeval.calibration.transforms import decide_votes, vote_features
from cigeval.errors import InputError
from cigeval.meta.calibrate._sklearn import in_one_thread, sklearn_modules
from cigeval.meta.calibrate.figures import gated_step, group_codes, group_weights, paired_figures
from cigeval.meta.calibrate.inputs import fingerprint
from cigeval.meta.calibrate.result import CalibrationResult, created_now, version
from cigeval.meta.calibrate.splits import Fold, grouped_kfold, repeated_holdout

#: GenAI-Bench's four labels.
LABELS = ("A>B", "B>A", "A=B=Good", "A=B=Bad")
#: The regularisation strengths the jury's cross-validation chooses from.
JURY_CS = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
_CONDITION_FIELDS = ("prompt", "source_prompt", "target_prompt", "instruct_prompt")


@dataclass
class VoteItems:
    """Pairs read from a votes file: ids, prompt groups, human labels, each judge's votes."""

    ids: list[Any]
    groups: list[str]
    human: list[str]
    votes: list[dict[str, str | None]]
    judges: list[str]
    notes: list[str]


def read_votes(path: str | Path, judges: Sequence[str] | None = None) -> VoteItems:
    """Read a votes file; a line that is not a pair with a human label is left out with a
    note (the first five named), and a file with none is an error."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read votes file {path}: {exc}") from None
    ids, groups, human, votes, notes = [], [], [], [], []
    bad = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        problem = _problem(row)
        if problem:
            bad += 1
            if bad <= 5:
                notes.append(f"{path} line {number}: {problem}; left out")
            continue
        ids.append(row.get("idx", number - 1))
        groups.append(json.dumps([row.get(k) for k in _CONDITION_FIELDS]))
        human.append(row["human_vote"])
        votes.append({str(k): (v if v in LABELS else None) for k, v in row["votes"].items()})
    if bad > 5:
        notes.append(f"{path}: {bad - 5} more line(s) left out")
    if not ids:
        raise InputError(f"{path}: no pair with a human vote and judges' votes")
    found = sorted({j for v in votes for j in v})
    chosen = list(judges) if judges else found
    missing = [j for j in chosen if j not in found]
    if missing:
        raise InputError(f"{path}: no votes from judge(s) {missing}; the file has {found}")
    return VoteItems(ids, groups, human, votes, chosen, notes)


def _problem(row: Any) -> str | None:
    if not isinstance(row, dict):
        return "not a JSON object"
    if row.get("human_vote") not in LABELS:
        return f"human_vote {row.get('human_vote')!r} is not one of {', '.join(LABELS)}"
    if not isinstance(row.get("votes"), dict) or not row["votes"]:
        return "no 'votes' object"
    return None


def mirrored(votes: Sequence[dict[str, str | None]], labels: Sequence[str]) -> tuple[list, list]:
    """The same pairs with the candidates swapped: ``A>B`` and ``B>A`` exchanged in every
    judge's vote and in the human label; ties stay ties."""
    swap = {"A>B": "B>A", "B>A": "A>B"}
    return (
        [{j: swap.get(v, v) if v else v for j, v in item.items()} for item in votes],
        [swap.get(label, label) for label in labels],
    )


def _log_loss(model: Any, features: np.ndarray, labels: np.ndarray) -> float:
    probabilities = model.predict_proba(features)
    at = {c: i for i, c in enumerate(model.classes_)}
    picked = np.asarray([probabilities[r, at[y]] if y in at else 0.0 for r, y in enumerate(labels)])
    return float(-np.mean(np.log(np.clip(picked, 1e-12, 1.0))))


def _fit_jury(
    votes: list[dict[str, str | None]],
    labels: np.ndarray,
    groups: np.ndarray,
    judges: Sequence[str],
    seed: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The multinomial jury (stored form) and what the train side chose: the regularisation
    ``C`` and whether to fit each pair in both orders (``symmetric``), by grouped 5-fold
    cross-validation (four-way accuracy on the pairs as given, log loss breaking ties)."""
    linear = sklearn_modules()["linear_model"]
    features = vote_features(votes, judges, LABELS)
    swapped_votes, swapped_labels = mirrored(votes, labels.tolist())
    swapped = vote_features(swapped_votes, judges, LABELS)
    swapped_y = np.asarray(swapped_labels)

    def fit(rows: np.ndarray, c: float, symmetric: bool) -> Any:
        x, y = features[rows], labels[rows]
        if symmetric:
            x, y = np.vstack([x, swapped[rows]]), np.concatenate([y, swapped_y[rows]])
        return linear.LogisticRegression(C=c, max_iter=2000).fit(x, y)

    folds = grouped_kfold(groups.tolist(), min(5, len(set(groups.tolist()))), seed, "jury")
    accuracies: dict[tuple[bool, float], float] = {}
    losses: dict[tuple[bool, float], float] = {}
    for symmetric in (False, True):
        for c in JURY_CS:
            fitted = [(fit(f.train, c, symmetric), f.test) for f in folds]
            accuracies[(symmetric, c)] = float(
                np.mean([(m.predict(features[t]) == labels[t]).mean() for m, t in fitted])
            )
            losses[(symmetric, c)] = float(
                np.mean([_log_loss(m, features[t], labels[t]) for m, t in fitted])
            )
    # chosen by the figure the jury is judged by (four-way accuracy), log loss breaking ties
    symmetric, c = min(accuracies, key=lambda key: (-accuracies[key], losses[key], key[0], key[1]))
    model = fit(np.arange(len(labels)), c, symmetric)
    stored = {
        "classes": [str(k) for k in model.classes_],
        "coef": np.atleast_2d(model.coef_).tolist(),
        "intercept": np.atleast_1d(model.intercept_).tolist(),
    }
    chosen = {
        "C": c,
        "symmetric": symmetric,
        "cv_accuracy": round(accuracies[(symmetric, c)], 4),
        "cv_log_loss": round(losses[(symmetric, c)], 4),
    }
    return stored, chosen


def _accuracy(votes: list[dict[str, str | None]], judge: str, human: np.ndarray) -> float:
    said = np.asarray([v.get(judge) or "" for v in votes])
    return float((said == human).mean()) if len(human) else math.nan


@in_one_thread
def calibrate_votes(
    path: str | Path,
    *,
    splits: int = 10,
    test_fraction: float = 0.4,
    seed: int = 0,
    n_boot: int = 1000,
    judges: Sequence[str] | None = None,
    folds: int | None = None,
) -> CalibrationResult:
    """Calibrate on a votes file (see the module docstring): ``splits`` seeded train/held-out
    splits holding out ``test_fraction`` of the prompt groups (or ``folds``-fold grouped
    cross-validation instead); ``judges`` restricts the jury to some judges."""
    items = read_votes(path, judges)
    human = np.asarray(items.human)
    groups = np.asarray(items.groups)
    features = vote_features(items.votes, items.judges, LABELS)
    fold_list: list[Fold] = (
        grouped_kfold(items.groups, folds, seed)
        if folds
        else repeated_holdout(items.groups, splits, test_fraction, seed)
    )
    per_split, predictions = [], []
    codes, count = group_codes(items.groups)
    correct = np.zeros((count, len(fold_list), 2))
    held = np.zeros((count, len(fold_list)))
    chosen_cs, best_names = [], []
    for k, fold in enumerate(fold_list):
        train_votes = [items.votes[i] for i in fold.train]
        accuracies = [_accuracy(train_votes, j, human[fold.train]) for j in items.judges]
        best = items.judges[int(np.argmax(accuracies))]
        model, picked = _fit_jury(
            train_votes, human[fold.train], groups[fold.train], items.judges, seed
        )
        jury = np.asarray(decide_votes(features[fold.test], model))
        single = np.asarray([items.votes[i].get(best) or "none" for i in fold.test])
        truth = human[fold.test]
        per_split.append(
            {
                "best_single": float((single == truth).mean()),
                "jury": float((jury == truth).mean()),
                "best_single_judge": best,
            }
        )
        chosen_cs.append(picked)
        best_names.append(best)
        np.add.at(correct[:, k, 0], codes[fold.test], (single == truth).astype(float))
        np.add.at(correct[:, k, 1], codes[fold.test], (jury == truth).astype(float))
        np.add.at(held[:, k], codes[fold.test], 1.0)
        for i, j_label, s_label in zip(fold.test, jury, single, strict=True):
            predictions.append(
                {
                    "split": k,
                    "idx": items.ids[i],
                    "jury": str(j_label),
                    "best_single": None if s_label == "none" else str(s_label),
                }
            )
    best_mean = float(np.mean([s["best_single"] for s in per_split]))
    jury_mean = float(np.mean([s["jury"] for s in per_split]))
    weights = group_weights(count, n_boot, seed) if n_boot > 0 else np.zeros((0, count))
    with np.errstate(invalid="ignore", divide="ignore"):
        held_w = weights @ held  # n_boot x splits
        single_draws = np.nanmean((weights @ correct[:, :, 0]) / held_w, axis=1)
        jury_draws = np.nanmean((weights @ correct[:, :, 1]) / held_w, axis=1)
    draws = np.column_stack([single_draws, jury_draws])  # n_boot x 2
    best_fig, jury_fig, gain = paired_figures([best_mean, jury_mean], draws)
    shown = gain["interval"] or [math.nan, math.nan]
    step = gated_step(
        "jury",
        "four-way accuracy",
        (best_fig, jury_fig, gain),
        measured=f"held-out four-way accuracy, mean over {len(fold_list)} splits: best single "
        f"{best_mean:.4f} -> jury {jury_mean:.4f}, gain {gain['value']:+.4f} "
        f"[{shown[0]:+.4f}, {shown[1]:+.4f}]",
        stock="the best single judge",
        chosen={"jury_per_split": chosen_cs, "best_single_per_split": best_names},
    )
    final, final_choice = _fit_jury(items.votes, human, groups, items.judges, seed)
    overall = [_accuracy(items.votes, j, human) for j in items.judges]
    best_all = items.judges[int(np.argmax(overall))]
    heldout = {
        "splits": len(fold_list),
        "test_fraction": None if folds else test_fraction,
        "pairs": len(items.ids),
        "best_single": best_mean,
        "jury": jury_mean,
        "gain": jury_mean - best_mean,
        "gain_interval": gain["interval"],
        "per_split": [{"best_single": s["best_single"], "jury": s["jury"]} for s in per_split],
        "best_single_judge": best_names,
        "intervals": {"best_single": best_fig["interval"], "jury": jury_fig["interval"]},
    }
    sha = file_sha256(Path(path))
    calibration = Calibration(
        kind="votes",
        cigeval_version=version(),
        created=created_now(),
        binding=Binding(judges=tuple(items.judges), rubric="pairwise votes"),
        dimension="vote",
        tasks={},
        votes=VotesCalibration(
            judges=items.judges,
            labels=list(LABELS),
            classes=final["classes"],
            coef=final["coef"],
            intercept=final["intercept"],
            C=final_choice["C"],
            symmetric=final_choice["symmetric"],
            best_single=best_all,
            use="jury" if step.kept else "best_single",
        ),
        steps=[step],
        heldout=heldout,
        data={
            "fingerprint": fingerprint({"votes": sha}),
            "sources": [{"path": str(path), "sha256": sha}],
            "items": len(items.ids),
            "split": f"{len(fold_list)} seeded splits (seed {seed}) grouped by text condition",
        },
        procedure=(
            "Best single judge: the most accurate on each train side. Jury: multinomial "
            f"logistic regression over one-hot votes; C from {list(JURY_CS)} and whether to "
            "fit each pair also with its candidates swapped, both chosen by 5-fold "
            "cross-validation grouped by text condition on the train side (four-way accuracy, "
            "log loss breaking ties). "
            f"Gain interval: percentile bootstrap of prompt groups, {n_boot} resamples, 95%."
        ),
    )
    return CalibrationResult(calibration, heldout, predictions, items.notes)
