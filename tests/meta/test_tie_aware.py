"""Tie-aware agreement beside the correlations: within-prompt win/tie/loss, GenAI-Bench's
four-way accuracy of stored votes, and the reliability of repeated judgements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cigeval.cli import main
from cigeval.meta import load_scores, meta_evaluate
from cigeval.meta.agreement import within_prompt_agreement
from cigeval.meta.preferences import load_preferences, preference_rows
from cigeval.meta.reliability import icc1, repeated_judgements


def _series(values: dict[tuple[str, str, str], float]) -> pd.Series:
    index = pd.MultiIndex.from_tuples(list(values), names=["task", "model", "uid"])
    return pd.Series(list(values.values()), index=index)


def test_win_tie_loss_counts_ties_as_their_own_verdict() -> None:
    human = _series({("t", "A", "1"): 0.5, ("t", "B", "1"): 0.5, ("t", "C", "1"): 1.0,
                     ("t", "A", "2"): 0.0, ("t", "B", "2"): 1.0})  # fmt: skip
    judge = _series({("t", "A", "1"): 0.3, ("t", "B", "1"): 0.3, ("t", "C", "1"): 0.2,
                     ("t", "A", "2"): 0.4, ("t", "B", "2"): 0.9})  # fmt: skip
    # pairs: (A,B)/1 tie-tie right; (A,C)/1 loss vs win wrong; (B,C)/1 wrong; (A,B)/2 right
    result = within_prompt_agreement(human, judge)
    assert result.pairs == 4 and result.overall == pytest.approx(0.5)
    assert result.human_ties == pytest.approx(0.25) and result.judge_ties == pytest.approx(0.25)
    banded = within_prompt_agreement(human, judge, band=0.15)  # 0.1 apart now ties
    assert banded.overall == pytest.approx(0.5) and banded.judge_ties == pytest.approx(0.75)


def test_meta_reports_gpt4o_win_tie_loss_beside_its_correlations(scores_dir: Path) -> None:
    result = meta_evaluate(load_scores(scores_dir / "gpt4o_0shot.tsv"))
    ties = result.tie_agreement
    assert ties is not None and ties.pairs == 9874
    assert ties.overall == pytest.approx(0.5671, abs=5e-5)  # issue 39's measurement
    assert round(ties.judge_ties, 2) == 0.24 and round(ties.human_ties, 2) == 0.44
    assert result.to_dict()["tie_aware"]["within_prompt_wtl"] == ties.overall
    assert "within-prompt win/tie/loss agreement: 0.5671" in result.table()


def test_genai_bench_votes_four_way_accuracy_as_published(shared: Path) -> None:
    folder = shared / "data" / "genaibench_votes"
    published = {("image_generation", "gpt4o"): 0.4559, ("image_edition", "gpt4o"): 0.5354,
                 ("image_edition", "gemini-1.5-pro"): 0.5593}  # fmt: skip
    for (name, judge), value in published.items():
        loaded = load_preferences(folder / f"{name}.jsonl", judge=judge)
        assert loaded.layout == "genai-bench-votes"
        (row,) = preference_rows(loaded.items, n_boot=0)[:1]
        assert row.with_ties.value == pytest.approx(value, abs=5e-5)


def test_votes_layout_reads_one_judge_and_names_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "votes.jsonl"
    lines = [
        {"idx": 0, "human_vote": "A=B=Bad", "votes": {"x": "A=B=Bad", "y": "A=B=Good"}},
        {"idx": 1, "human_vote": "A>B", "votes": {"x": "A>B", "y": None}},
        {"idx": 2, "human_vote": "B>A", "votes": {"x": "A>B", "y": "B>A"}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["meta", "preferences", str(path)]) == 2
    assert "--judge" in capsys.readouterr().err
    for judge, right in (("x", 2 / 3), ("y", 1 / 3)):
        rows = preference_rows(load_preferences(path, judge=judge).items, n_boot=0)
        assert rows[0].with_ties.value == pytest.approx(right)


def _record(judgments: list[list[float]]) -> dict[str, Any]:
    subs = [{"score": float(np.mean(j)), "scale": [0, 10], "judgments": j} for j in judgments]
    return {"status": "ok", "config": {"aggregate": "min"}, "sub_scores": subs}


def test_repeated_judgements_reliability() -> None:
    steady = [_record([[v, v, v], [9, 9, 9]]) for v in (1, 4, 6, 8)]
    result = repeated_judgements(steady)
    assert result is not None and result.judgements == 3 and result.images == 4
    assert result.icc == pytest.approx(1.0) and result.exact == 1.0
    assert result.spearman == pytest.approx(1.0)
    # per judgement the image score is the min over sub-questions: [1, 2] vs [3, 0] ...
    noisy = [_record([[1, 3], [2, 0]]), _record([[5, 6], [7, 7]]), _record([[8, 9], [9, 8]])]
    got = repeated_judgements(noisy)
    matrix = np.array([[0.1, 0.0], [0.5, 0.6], [0.8, 0.8]])
    assert got is not None and got.icc == pytest.approx(icc1(matrix))
    assert got.exact == pytest.approx(1 / 3)
    assert repeated_judgements([_record([[5], [6]])]) is None  # one judgement each
