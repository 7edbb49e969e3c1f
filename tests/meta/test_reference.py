"""Reproducing the published and recomputed meta-evaluation numbers from the shared data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cigeval.meta import combine_scores, human_baseline, load_viescore_tsv, meta_evaluate
from cigeval.meta.result import MetaResult
from cigeval.tasks.ids import PAPER_TASK_ORDER


def _row(result: MetaResult) -> list[float]:
    return [round(result.tasks[t], 4) for t in PAPER_TASK_ORDER] + [round(result.average, 4)]


@pytest.fixture(scope="module")
def gpt4o_0shot(scores_dir: Path):
    return load_viescore_tsv(scores_dir / "gpt4o_0shot.tsv")


@pytest.fixture(scope="module")
def gpt4o_1shot(scores_dir: Path):
    return load_viescore_tsv(scores_dir / "gpt4o_1shot.tsv")


def test_published_human_row_by_default(reference: dict[str, Any]) -> None:
    published = reference["cigeval_table1_SC_spearman"]["human_raters"]
    assert published == [0.5044, 0.539, 0.423, 0.5443, 0.478, 0.4887, 0.5927, 0.47]
    result = human_baseline("SC", averaging="paper")  # the paper's rounding comes with it
    assert [result.tasks[t] for t in PAPER_TASK_ORDER] + [result.average] == published
    assert result.rounding.to_dict() == {"correlations": 4, "averages": 4}
    explicit = human_baseline("SC", averaging="paper", round_to=4)
    assert [explicit.tasks[t] for t in PAPER_TASK_ORDER] + [explicit.average] == published


def test_human_row_without_rounding(reference: dict[str, Any]) -> None:
    recomputed = reference["recomputed_from_shared_data"]
    result = human_baseline("SC", round_to=None)
    assert _row(result) == recomputed["human_raters_SC_per_task"]
    averages = [round(human_baseline(d, round_to=None).average, 4) for d in ("SC", "PQ", "O")]
    assert averages == recomputed["human_raters_SC_PQ_O_AVG"]
    # fisher_z averaging rounds nothing unless asked
    assert human_baseline("SC", averaging="fisher_z").rounding.to_dict() == {
        "correlations": None,
        "averages": None,
    }


def test_published_viescore_gpt4o_row(reference: dict[str, Any], gpt4o_0shot) -> None:
    published = reference["cigeval_table1_SC_spearman"]["VIEScore_GPT-4o"]
    result = meta_evaluate(gpt4o_0shot, "SC")
    assert _row(result) == published
    assert result.coverage_totals()["used"] == 4801
    assert len(result.per_model) == 29


def test_min_tiebreak_mean_row(gpt4o_0shot, scores_dir: Path) -> None:
    # min over the coarse 0-10 SC lists ties many images; breaking the ties by the mean of the
    # other sub-scores, with nothing fitted, moves the paper-averaged rho 0.4459 -> 0.4483
    tiebreak = load_viescore_tsv(scores_dir / "gpt4o_0shot.tsv", rule="min_tiebreak_mean")
    plain, broken = meta_evaluate(gpt4o_0shot, "SC"), meta_evaluate(tiebreak, "SC")
    unrounded = meta_evaluate(gpt4o_0shot, "SC", round_to=None)
    assert round(unrounded.average, 6) == 0.445867
    assert round(meta_evaluate(tiebreak, "SC", round_to=None).average, 6) == 0.448312
    assert _row(broken) == [0.4989, 0.5382, 0.3985, 0.5093, 0.5042, 0.4773, 0.4518, 0.4483]
    # Text-Guided IG answers hold one SC score, so nothing can tie-break there
    assert broken.tasks["text_guided_ig"] == plain.tasks["text_guided_ig"]
    assert broken.coverage_totals()["used"] == 4801


def test_min_tiebreak_mean_does_not_help_every_judge(gpt4o_1shot, scores_dir: Path) -> None:
    # the same rule on the 1-shot answers costs a little: report it, do not make it the default
    tiebreak = load_viescore_tsv(scores_dir / "gpt4o_1shot.tsv", rule="min_tiebreak_mean")
    assert round(meta_evaluate(gpt4o_1shot, "SC").average, 4) == 0.4313
    assert round(meta_evaluate(tiebreak, "SC").average, 4) == 0.4306


def test_true_fisher_z_row(reference: dict[str, Any], gpt4o_0shot) -> None:
    expected = reference["recomputed_from_shared_data"]["gpt4o_0shot_SC_true_fisher_z"]
    assert _row(meta_evaluate(gpt4o_0shot, "SC", averaging="fisher_z")) == expected


def test_gpt4o_1shot(reference: dict[str, Any], scores_dir: Path, gpt4o_1shot) -> None:
    sc, pq, overall = reference["recomputed_from_shared_data"]["gpt4o_1shot_SC_PQ_O_AVG"]
    # The reference (and issue 6) count an image with an empty PQ answer as missing for SC too.
    by_row = load_viescore_tsv(scores_dir / "gpt4o_1shot.tsv", missing="row")
    # recomputed without the published rounding
    assert round(meta_evaluate(by_row, "SC", round_to=None).average, 4) == sc
    assert round(meta_evaluate(gpt4o_1shot, "PQ", round_to=None).average, 4) == pq
    assert meta_evaluate(gpt4o_1shot, "O").average == pytest.approx(overall, abs=2e-4)
    per_cell = meta_evaluate(gpt4o_1shot, "SC")
    assert round(per_cell.average, 4) == 0.4313
    assert per_cell.coverage_totals()["used"] == 4801
    assert meta_evaluate(by_row, "SC").coverage_totals()["missing"] == 16


@pytest.mark.parametrize(("dimension", "key"), [("PQ", "gpt4o_0shot_PQ"), ("O", "gpt4o_0shot_O")])
def test_gpt4o_0shot_pq_and_o_close_to_recomputed(
    reference: dict[str, Any], gpt4o_0shot, dimension: str, key: str
) -> None:
    # Known gap: the researcher's recomputation differs in the 4th decimal on a few tasks
    # (largest 0.0021, Text-Guided IG O) for reasons the shared data does not reveal; SC and
    # the human rows match exactly.
    expected = reference["recomputed_from_shared_data"][key]
    got = _row(meta_evaluate(gpt4o_0shot, dimension))
    assert got == pytest.approx(expected, abs=2.5e-3)


def test_ensemble_of_gpt4o_0shot_and_1shot(gpt4o_0shot, gpt4o_1shot) -> None:
    combined = combine_scores([gpt4o_0shot, gpt4o_1shot], "mean")
    result = meta_evaluate(combined, "SC", averaging="paper")
    assert result.average == pytest.approx(0.4638, abs=1e-3)
    assert round(result.average, 4) == 0.4638
    assert result.coverage_totals()["used"] == 4801


def test_test_split_restricts_and_changes_the_numbers(gpt4o_0shot) -> None:
    from cigeval.meta import make_split

    split = make_split(0.4, seed=0)
    result = meta_evaluate(gpt4o_0shot, samples=split.subset("test"))
    totals = result.coverage_totals()
    assert totals["n_human"] == totals["used"] < 4801
    assert 0.35 * 4801 < totals["used"] < 0.45 * 4801
    assert result.average != pytest.approx(meta_evaluate(gpt4o_0shot).average, abs=1e-6)
