"""Meta never pools runs of different settings, and counts one record per sample id (the
last written), in the correlation table and in the trajectory export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from cigeval.errors import InputError
from cigeval.meta import combine_scores, load_human_ratings, load_scores, meta_evaluate
from tests.meta.test_cli import run

TASK, MODEL = "mask_guided_ie", "Glide"


def _uids(n: int) -> list[str]:
    return list(load_human_ratings().loc[(TASK, MODEL)].index[:n])


def _record(uid: str, score: float, aggregate: str = "min", **extra: Any) -> dict[str, Any]:
    return {
        "id": uid,
        "task": TASK,
        "model": MODEL,
        "status": "ok",
        "score": score,
        "config": {"aggregate": aggregate},
        **extra,
    }


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_two_runs_in_one_file_become_two_rows(tmp_path: Path, capsys) -> None:
    uids = _uids(12)
    first = [_record(u, (i % 5) / 4) for i, u in enumerate(uids)]
    second = [_record(u, ((i * 7) % 5) / 4, aggregate="max") for i, u in enumerate(uids[:8])]
    path = _write(tmp_path / "results.jsonl", first + second)
    status, out, err = run(["imagenhub", "--scores", str(path), "--json"], capsys)
    assert status == 0
    assert "holds records of 2 runs with different settings (config.aggregate)" in err
    rows = json.loads(out)["rows"]
    assert len(rows) == 2 and rows[0]["fingerprint"] != rows[1]["fingerprint"]
    assert rows[0]["evaluator"] == f"results [{rows[0]['fingerprint']}]"
    counts = [r["per_model"][TASK][MODEL]["n"] for r in rows]
    assert counts == [12, 8]  # each run on its own, never 20 pooled
    status, out, _ = run(["imagenhub", "--scores", str(path)], capsys)
    assert sum(line.startswith("results [") for line in out.splitlines()) == 2

    frame = load_scores(path)
    with pytest.raises(InputError, match="2 runs with different settings"):
        meta_evaluate(frame)
    with pytest.raises(InputError, match="2 runs with different settings"):
        combine_scores([frame], "mean")


def test_one_record_per_id_the_last_one_written(tmp_path: Path, capsys) -> None:
    uids = _uids(10)
    scores = [round(0.1 * i, 1) for i in range(10)]
    records = [_record(u, s) for u, s in zip(uids, scores, strict=True)]
    records.append(_record(uids[0], 0.95))  # a rerun of the first sample: it counts
    path = _write(tmp_path / "results.jsonl", records)
    status, out, err = run(
        ["imagenhub", "--scores", str(path), "--round", "none", "--json"], capsys
    )
    assert status == 0
    cell = json.loads(out)["per_model"][TASK][MODEL]
    assert cell["n"] == 10  # samples, not lines
    human = load_human_ratings().loc[(TASK, MODEL)].loc[uids, "SC"].to_numpy()
    last_wins = [0.95, *scores[1:]]
    assert cell["rho"] == pytest.approx(stats.spearmanr(human, last_wins).statistic, abs=1e-12)
    assert cell["rho"] != pytest.approx(stats.spearmanr(human, scores).statistic, abs=1e-6)
    assert "1 repeated record(s) of 1 sample id(s)" in err
    assert any("the last record of each id counts" in n for n in json.loads(out)["notes"])


def _trace(reply: str) -> list[dict[str, Any]]:
    message = {"role": "user", "text": "Rate.", "images": []}
    return [
        {
            "type": "model_call",
            "purpose": "judge",
            "model": "j",
            "reply": reply,
            "messages": [message],
        }
    ]


def test_the_export_keeps_the_last_record_of_an_id(tmp_path: Path, capsys) -> None:
    records = [
        {**_record("x", 0.2), "trace": _trace("first try")},
        {**_record("y", 0.5), "trace": _trace("other sample")},
        {**_record("x", 0.8), "trace": _trace("the rerun")},
    ]
    path = _write(tmp_path / "results.jsonl", records)
    out_file = tmp_path / "sft.jsonl"
    status, out, err = run(["export-trajectories", str(path), "--out", str(out_file)], capsys)
    assert status == 0 and out == ""
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    replies = [row["messages"][-1]["content"][0]["text"] for row in rows]
    assert sorted(replies) == ["other sample", "the rerun"]
    assert "wrote 2 conversations from 2 samples (2 records read)" in err
    assert "1 repeated record(s) of a sample id dropped" in err


@pytest.mark.parametrize(
    ("records", "why"),
    [
        ([], "results.jsonl holds no readable results record"),
        (
            [{**_record("x", 0.2), "status": "error", "trace": _trace("oops")}],
            "all 1 records were skipped (1 status not ok): every sample ended in an error",
        ),
        ([_record("x", 0.2)], "all 1 records were skipped (1 no model calls in the trace)"),
    ],
)
def test_an_export_that_writes_nothing_exits_1_and_says_why(
    records: list[dict[str, Any]], why: str, tmp_path: Path, capsys
) -> None:
    path = _write(tmp_path / "results.jsonl", records)
    argv = ["export-trajectories", str(path), "--out", str(tmp_path / "sft.jsonl")]
    status, out, err = run(argv, capsys)
    assert status == 1 and out == ""
    assert "wrote 0 conversations" in err
    assert "error: nothing to train on: " in err and why in err


def test_a_split_that_keeps_nothing_is_named(tmp_path: Path, capsys) -> None:
    uid = _uids(1)[0]
    path = _write(tmp_path / "results.jsonl", [{**_record(uid, 0.5), "trace": _trace("8")}])
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": {}, "test": {TASK: [uid]}}), encoding="utf-8")
    argv = ["export-trajectories", str(path), "--out", str(tmp_path / "sft.jsonl")]
    status, _, err = run([*argv, "--split", str(split), "--subset", "train"], capsys)
    assert status == 1 and f"no sample is on the train side of {split}" in err
    status, _, err = run([*argv, "--split", str(split), "--subset", "test"], capsys)
    assert status == 0 and "wrote 1 conversations" in err
