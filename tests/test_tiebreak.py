"""The ``min_tiebreak_mean`` aggregate: its values, the order it keeps, and every place it is
used (the agentic rubric, ensembles, factor rubrics, ``cigeval evaluate --aggregate``)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cigeval import EnsembleConfig, Evaluator, RunConfig, ScriptedBackend
from cigeval.errors import ConfigError
from cigeval.results.jsonl import read_records
from cigeval.rubrics import define_rubric
from cigeval.rules import AGGREGATE_RULES, TIEBREAK_WEIGHT, aggregate, min_tiebreak_mean
from cigeval.sample import sample_from_dict
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples
from tests.cli_support import evaluate_cli

NO_CACHE = RunConfig(use_cache=False)
#: edit_success 3 and over_editing 8: min 3, the other 5 points higher.
SCORES = {"edit_success": 3, "over_editing": 8}


def _key(values: tuple[float, ...]) -> tuple[float, float]:
    """The lexicographic order the rule stands for: min first, then the mean of the others."""
    ordered = sorted(values)
    others = ordered[1:]
    return ordered[0], (sum(others) / len(others) if others else ordered[0])


def test_known_values():
    assert TIEBREAK_WEIGHT == 0.01
    assert min_tiebreak_mean([6, 9, 9]) == pytest.approx(6.03)
    assert min_tiebreak_mean([3, 8, 3]) == pytest.approx(3 + 0.01 * (5.5 - 3))
    assert min_tiebreak_mean([7]) == 7.0
    assert min_tiebreak_mean([4, 4]) == 4.0
    assert aggregate([2, 10], "min_tiebreak_mean") == pytest.approx(2.08)
    assert aggregate([2, 10], "min") == 2.0
    assert "min_tiebreak_mean" in AGGREGATE_RULES
    with pytest.raises(ValueError):
        min_tiebreak_mean([])
    with pytest.raises(ConfigError, match="min_tiebreak_mean"):
        aggregate([1.0], "minimum")


def test_order_is_min_then_mean_of_the_others_for_whole_scores():
    # every list of one to three whole 0-10 scores, sorted by the lexicographic key: the values
    # rise exactly where the key rises and are equal where the key is equal
    lists = [c for n in (1, 2, 3) for c in itertools.combinations_with_replacement(range(11), n)]
    ranked = sorted(lists, key=_key)
    for before, after in itertools.pairwise(ranked):
        a, b = min_tiebreak_mean(before), min_tiebreak_mean(after)
        if _key(before) == _key(after):
            assert a == pytest.approx(b)
        else:
            assert a < b, (before, after)


@given(
    st.lists(st.integers(0, 100), min_size=1, max_size=8),
    st.lists(st.integers(0, 100), min_size=1, max_size=8),
)
def test_one_decimal_scores_never_swap_different_minimums(first, second):
    a_values = [v / 10 for v in first]
    b_values = [v / 10 for v in second]
    a, b = min_tiebreak_mean(a_values), min_tiebreak_mean(b_values)
    assert min(a_values) <= a <= max(a_values)
    if min(a_values) < min(b_values):
        assert a <= b
    assert min(a_values) <= a <= min(a_values) + 0.1 + 1e-12


@pytest.fixture
def tie_sample(tmp_path: Path):
    records = {r["id"]: r for r in seven_task_samples(tmp_path)}
    return sample_from_dict(records["tie"], base_dir=tmp_path)


def test_the_agentic_rubric_uses_the_configured_rule(tie_sample):
    scores = {}
    for rule in ("min", "min_tiebreak_mean"):
        judge = ScriptedBackend(rule_judge(SCORES))
        score = Evaluator(judge, run_config=NO_CACHE, tools=(), aggregate=rule).evaluate(tie_sample)
        assert score.status == "ok", score.error
        scores[rule] = score.value
    assert scores["min"] == pytest.approx(0.3)
    assert scores["min_tiebreak_mean"] == pytest.approx((3 + 0.01 * 5) / 10)


def test_ensembles_aggregate_combined_sub_scores_with_the_rule(tie_sample):
    a = ScriptedBackend(rule_judge(scores={"edit_success": 2, "over_editing": 9}), name="a")
    b = ScriptedBackend(rule_judge(scores={"edit_success": 6, "over_editing": 5}), name="b")
    ev = Evaluator(
        [a, b],
        run_config=NO_CACHE,
        tools=(),
        aggregate="min_tiebreak_mean",
        ensemble=EnsembleConfig(combine="mean", level="sub_question"),
    )
    score = ev.evaluate(tie_sample)
    # mean per question (4 and 7), then 4 + 0.01 * (7 - 4)
    assert score.status == "ok" and score.value == pytest.approx(0.403)


def test_a_factor_rubric_can_aggregate_with_the_rule():
    rubric = define_rubric(
        "t_tiebreak",
        factors={"a": "A.", "b": "B.", "c": "C."},
        aggregate="min_tiebreak_mean",
        register=False,
    )
    assert rubric.value({"a": 7, "b": 4, "c": 6}) == pytest.approx((4.025 - 1) / 6)
    assert rubric.value_mapping() == "(min_tiebreak_mean - 1) / 6"


def test_through_the_cli_against_an_openai_compatible_server(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    samples = tmp_path / "samples.jsonl"
    records = [r for r in seven_task_samples(tmp_path) if r["id"] == "tie"]
    samples.write_text(json.dumps(records[0]) + "\n", encoding="utf-8")
    out = tmp_path / "results.jsonl"
    with FakeOpenAIServer(rule_judge(SCORES)) as server:
        argv = ("--no-cache", "--tools", "", "--aggregate", "min_tiebreak_mean")
        assert evaluate_cli(server, samples, out, *argv) == 0
    (record,) = read_records(out)
    assert record["status"] == "ok"
    assert record["score"] == pytest.approx(0.305)
    assert record["config"]["aggregate"] == "min_tiebreak_mean"
    assert sorted(s["score"] for s in record["sub_scores"]) == [3, 8]
