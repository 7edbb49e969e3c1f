"""Synthetic judges and labels for the calibration tests: data no calibration ever saw, whose
structure the tests know (which judge is informative, how the labels are made); and a fitted
calibration whose functions the tests know."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from cigeval.calibration import Binding, Calibration, TaskCalibration
from cigeval.tasks.ids import IMAGENHUB_TASK_NAMES, PAPER_TASK_ORDER

LABELS = ("A>B", "B>A", "A=B=Good", "A=B=Bad")


def linear_calibration(binding: Binding) -> Calibration:
    """A calibration of every task for ``binding``: the map 0.1 + 0.8 x, and the interval
    [0, 0.6] below a score of 0.5, [0.3, 1] above."""
    task = TaskCalibration(
        judges=[{"rule": "min"}],
        map={"x": [0.0, 1.0], "y": [0.1, 0.9]},
        interval={"x": [0.0, 0.5], "lower": [0.0, 0.3], "upper": [0.6, 1.0]},
    )
    return Calibration(
        kind="scores", cigeval_version="test", created="test", binding=binding, tasks={"*": task}
    )


def votes_file(path: Path, pairs: int = 300, seed: int = 1, informative_copy: bool = False) -> Path:
    """Pairs with a human vote and three judges. ``sharp`` names the better candidate well
    but calls every tie a good tie; ``bad_eye`` says both-bad when people do, often; ``coin``
    votes at random. A jury can learn that ``sharp``'s ties and ``bad_eye``'s both-bad mean
    both-bad. With ``informative_copy`` the judges are ``honest`` (the human's label 70% of
    the time, else one of the other three at random, so its own label is already the best
    guess) and an exact copy of it: a jury can learn nothing better."""
    rng = np.random.default_rng(seed)
    lines = []
    for idx in range(pairs):
        human = str(rng.choice(LABELS, p=[0.33, 0.33, 0.09, 0.25]))
        if human in ("A>B", "B>A"):
            sharp = human if rng.random() < 0.8 else str(rng.choice(LABELS[:3]))
        else:
            sharp = "A=B=Good" if rng.random() < 0.85 else str(rng.choice(LABELS[:2]))
        bad_eye = (
            "A=B=Bad" if human == "A=B=Bad" and rng.random() < 0.7 else str(rng.choice(LABELS[:3]))
        )
        votes: dict[str, Any] = {"sharp": sharp}
        if informative_copy:
            others = [label for label in LABELS if label != human]
            honest = human if rng.random() < 0.7 else str(rng.choice(others))
            votes = {"honest": honest, "copy": honest}
        else:
            votes["bad_eye"] = bad_eye
            votes["coin"] = str(rng.choice(LABELS)) if rng.random() < 0.9 else None
        prompt = f"prompt {idx // 2}"  # two pairs per prompt
        lines.append({"idx": idx, "prompt": prompt, "human_vote": human, "votes": votes})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def record(
    item: str,
    task: str,
    subs: list[float],
    model: str,
    uid: str,
    judge: str = "openai:synthetic-judge",
) -> dict[str, Any]:
    """A cigeval results record of one judge, scored min(subs) / 10."""
    return {
        "id": item,
        "task": task,
        "rubric": "cigeval",
        "status": "ok",
        "score": min(subs) / 10,
        "sub_scores": [
            {"question_id": f"q{i}", "question": f"q{i}", "score": s, "scale": [0, 10]}
            for i, s in enumerate(subs)
        ],
        "model": model,
        "metadata": {"uid": uid},
        "judge": judge,
        "config": {"rubric": "cigeval", "aggregate": "min", "method": "paper"},
        "provenance": {
            "cigeval_version": "test",
            "method": "paper",
            "prompt_set": "paraphrase",
            "judges": [{"judge": judge, "prompts_sha256": "abc", "prompt_set": "paraphrase"}],
        },
        "fingerprint": f"fp-{judge}",
    }


def results_and_labels(
    folder: Path,
    prompts: int = 120,
    generators: int = 3,
    seed: int = 2,
    judge: str = "openai:synthetic-judge",
) -> tuple[Path, Path, list[dict[str, Any]]]:
    """A results file of one judge over two tasks and a CSV of ratings on a 1-5 scale: each
    image has a hidden quality; three raters give 1-5 ratings near it; the judge's two
    sub-scores are noisy 0-10 readings of it (so its min is a monotone but bent proxy)."""
    rng = np.random.default_rng(seed)
    records, ratings = [], []
    for p in range(prompts):
        task = "text_guided_ie" if p % 2 else "text_guided_ig"
        base = rng.uniform(0.1, 0.9)
        for g in range(generators):
            quality = float(np.clip(base + rng.normal(0, 0.2), 0, 1))
            raters = np.clip(np.round(1 + 4 * quality + rng.normal(0, 0.7, 3)), 1, 5)
            subs = [
                float(np.clip(np.round(10 * quality**1.5 + rng.normal(0, 1.5)), 0, 10))
                for _ in range(2)
            ]
            item = f"p{p}-g{g}"
            records.append(record(item, task, subs, f"gen{g}", f"u{p}", judge))
            ratings.append((item, float(raters.mean())))
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    labels = folder / "labels.csv"
    with labels.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "rating"])
        writer.writerows(ratings)
    return results, labels, records


def imagenhub_like(folder: Path, uids: int = 10, seed: int = 3) -> tuple[Path, Path, Path, Path]:
    """Rater files for every task laid out as the shipped ones (three generators, ``uids``
    samples each), two VIEScore-style judge tables (one informative, one weaker) and a
    cigeval split file: what ``calibrate imagenhub`` reads, without the shipped data."""
    rng = np.random.default_rng(seed)
    ratings = folder / "ratings"
    rows_a, rows_b = [], []
    split: dict[str, dict[str, list[str]]] = {"train": {}, "test": {}}
    for task in PAPER_TASK_ORDER:
        task_name = IMAGENHUB_TASK_NAMES[task]
        (ratings / task_name).mkdir(parents=True)
        models = ["M1", "M2", "M3"]
        cells = {r: [] for r in (1, 2, 3)}
        names = [f"s{u}.jpg" for u in range(uids)]
        split["test"][task] = names[: uids * 2 // 5]
        split["train"][task] = names[uids * 2 // 5 :]
        for name in names:
            row = {r: [] for r in (1, 2, 3)}
            for model in models:
                quality = rng.uniform(0, 1)
                for r in (1, 2, 3):
                    sc = float(np.clip(np.round(2 * (quality + rng.normal(0, 0.15))) / 2, 0, 1))
                    row[r].append(f"[{sc:g}, 1]")
                length = 1 if task == "text_guided_ig" else 2
                good = [
                    int(np.clip(round(10 * quality + rng.normal(0, 1)), 0, 10))
                    for _ in range(length)
                ]
                weak = [
                    int(np.clip(round(10 * quality + rng.normal(0, 3)), 0, 10))
                    for _ in range(length)
                ]
                rows_a.append((task_name, model, name, json.dumps(good), "[5, 5]"))
                rows_b.append((task_name, model, name, json.dumps(weak), "[5, 5]"))
            for r in (1, 2, 3):
                cells[r].append("\t".join([name, *row[r]]))
        for r in (1, 2, 3):
            text = "\t".join(["uid", *models]) + "\n" + "\n".join(cells[r]) + "\n"
            (ratings / task_name / f"Synthetic_rater{r}.tsv").write_text(text, encoding="utf-8")
    tables = []
    for name, rows in (("good_judge", rows_a), ("weak_judge", rows_b)):
        path = folder / f"{name}.tsv"
        lines = ["task\tmodel\tuid\tsc_score\tpq_score", *("\t".join(r) for r in rows)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tables.append(path)
    split_path = folder / "split.json"
    split_path.write_text(json.dumps(split), encoding="utf-8")
    return ratings, tables[0], tables[1], split_path
