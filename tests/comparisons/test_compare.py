"""cigeval.compare: which records pair, what is set aside and why, the numbers per task,
judge view and settings group, the Bradley–Terry fit, and the command line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

import cigeval
from cigeval.cli import main
from cigeval.comparisons import compare, holm, signed_rank_p
from cigeval.comparisons.bradley_terry import fit_strengths, outcome_tensors
from cigeval.comparisons.inputs import condition_key


def record(generator, prompt, score, *, task="text_guided_ig", id=None, **extra):
    """A minimal ok results record of ``generator`` on ``prompt``."""
    out = {
        "id": id or f"{generator}-{prompt}",
        "task": task,
        "model": generator,
        "status": "ok",
        "score": score,
        "conditions": {"prompt": prompt},
        "judge": "scripted:j",
    }
    out.update(extra)
    return out


def test_records_pair_on_task_text_and_input_images_never_on_the_output():
    base = {"input_images": {"source": "s1", "output": "o1"}}
    a = record("A", "p", 0.5, task="text_guided_ie", **base)
    b = record("B", "p", 0.7, task="text_guided_ie", input_images={"source": "s1", "output": "o2"})
    other_source = record(
        "B", "p", 0.7, task="text_guided_ie", input_images={"source": "s2", "output": "o3"}
    )
    assert condition_key(a) == condition_key(b) != condition_key(other_source)
    assert condition_key(a) != condition_key(record("B", "p", 0.7, task="text_guided_ig"))
    uid = record("A", "p", 0.5, metadata={"uid": "42"})
    same_uid = record("B", "another wording", 0.5, metadata={"uid": "42"})
    assert condition_key(uid) == condition_key(same_uid) != condition_key(a)
    assert condition_key({"id": "x", "task": "t", "status": "ok", "score": 1}) is None


def test_differences_wins_and_p_values_on_the_conditions_both_answered():
    records = [record("A", f"p{i}", 0.4) for i in range(8)]
    records += [record("B", f"p{i}", 0.4 + d) for i, d in enumerate([0.1] * 6 + [0, -0.1])]
    records += [record("B", "only B answered this", 0.9)]
    result = compare(records, "A", n_boot=200)
    (row,) = result.groups[0].judges[0].overall()
    diffs = [0.1] * 6 + [0.0, -0.1]
    assert (row.n, row.wins, row.ties, row.losses) == (8, 6, 1, 1)
    assert row.mean_difference == pytest.approx(np.mean(diffs))
    assert row.mean_baseline == pytest.approx(0.4) and row.only_generator == 1
    expected = stats.wilcoxon([d for d in diffs if d], zero_method="wilcox").pvalue
    assert row.p_value == pytest.approx(expected)
    assert row.low is not None and row.low <= row.mean_difference <= row.high
    again = compare(records, "A", n_boot=200).groups[0].judges[0].overall()[0]
    assert (again.low, again.high) == (row.low, row.high)  # fixed by the seed


def test_rows_per_task_and_holm_across_generators():
    records = []
    for i in range(30):
        task = "text_guided_ig" if i % 2 else "control_guided_ig"
        records.append(record("A", f"p{i}", 0.5, task=task))
        records.append(record("B", f"p{i}", 0.6 + 0.001 * i, task=task))
        records.append(record("C", f"p{i}", 0.5 + (0.01 if i % 3 else -0.01), task=task))
    view = compare(records, "A", n_boot=100).groups[0].judges[0]
    tasks = {(d.generator, d.task) for d in view.differences}
    assert ("B", "all tasks") in tasks and ("C", "text_guided_ig") in tasks
    assert len(view.differences) == 6
    overall = view.overall()
    assert [r.p_holm for r in overall] == holm([r.p_value for r in overall])


def test_holm_reproduces_a_hand_computed_example():
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1 -> 0.03, 0.06, 0.04 -> running max 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_signed_rank_edge_cases():
    assert signed_rank_p([]) is None
    assert signed_rank_p([0.0, 0.0, 1e-12]) == 1.0


def test_different_fingerprints_are_never_paired_and_the_setting_is_named():
    same = {"config": {"aggregate": "min"}}
    records = [record("A", f"p{i}", 0.5, **same) for i in range(5)]
    records += [record("B", f"p{i}", 0.9, config={"aggregate": "mean"}) for i in range(5)]
    result = compare(records, "A", n_boot=50)
    assert [g.generators for g in result.groups] == [["A"]]
    (aside,) = result.set_aside
    assert aside.generator == "B" and aside.count == 5 and "config.aggregate" in aside.reason
    assert "never paired" in result.table()


def test_each_settings_group_holding_the_baseline_is_compared_on_its_own():
    records = []
    for aggregate in ("min", "mean"):
        for i in range(6):
            records.append(record("A", f"p{i}", 0.5, id=f"A{aggregate}{i}",
                                  config={"aggregate": aggregate}))  # fmt: skip
            records.append(record("B", f"p{i}", 0.6, id=f"B{aggregate}{i}",
                                  config={"aggregate": aggregate}))  # fmt: skip
    result = compare(records, "A", n_boot=50)
    assert len(result.groups) == 2
    assert all(g.judges[0].overall()[0].n == 6 for g in result.groups)  # not 12: never pooled
    assert any("compared on its own" in note for note in result.notes)


def test_one_record_per_id_errors_and_unpairable_records_set_aside():
    records = [record("A", f"p{i}", 0.5) for i in range(4)]
    records += [record("B", f"p{i}", 0.1) for i in range(4)]
    records += [record("B", f"p{i}", 0.8) for i in range(4)]  # a rerun: same ids, later lines
    records.append({**record("B", "p9", None), "status": "error", "error": "boom"})
    records.append({"id": "old", "task": "text_guided_ig", "model": "B", "status": "ok",
                    "score": 0.5})  # fmt: skip
    records.append(record("B", "p1", 1.0, id="pref", details={"candidates": ["x", "y"]}))
    result = compare(records, "A", n_boot=50)
    row = result.groups[0].judges[0].overall()[0]
    assert row.n == 4 and row.mean_difference == pytest.approx(0.3)  # the rerun's scores
    reasons = {s.reason.split(" (")[0]: s.count for s in result.set_aside}
    assert reasons == {"ended in error": 1, "names no condition": 1,
                       "holds a preference between candidates": 1}  # fmt: skip
    assert any("appear more than once" in note for note in result.notes)


def test_repeated_records_of_a_condition_are_averaged():
    records = [record("A", "p", 0.2), record("B", "p", 0.4, id="b1")]
    records.append(record("B", "p", 0.8, id="b2"))
    group = compare(records, "A", n_boot=10).groups[0]
    assert group.averaged == 2
    assert group.judges[0].overall()[0].mean_difference == pytest.approx(0.4)


def test_ensembles_compare_per_judge_and_combined():
    def ensemble(generator, prompt, first, second):
        return record(
            generator, prompt, (first + second) / 2, judge="scripted:x,scripted:y",
            details={"judgments": [
                {"judge": "scripted:x", "status": "ok", "score": first},
                {"judge": "scripted:y", "status": "ok", "score": second},
            ]},
        )  # fmt: skip

    records = [ensemble("A", f"p{i}", 0.5, 0.5) for i in range(6)]
    records += [ensemble("B", f"p{i}", 0.7, 0.4) for i in range(6)]
    views = {v.judge: v.overall()[0] for v in compare(records, "A", n_boot=50).groups[0].judges}
    assert list(views) == ["combined", "scripted:x", "scripted:y"]
    assert views["combined"].mean_difference == pytest.approx(0.05)
    assert views["scripted:x"].mean_difference == pytest.approx(0.2)
    assert views["scripted:y"].mean_difference == pytest.approx(-0.1)


def test_unknown_baseline_is_a_clear_error():
    with pytest.raises(cigeval.ConfigError, match=r"baseline 'Z'.*A, B"):
        compare([record("A", "p", 0.1), record("B", "p", 0.2)], "Z")


def test_bradley_terry_fit_is_the_maximum_likelihood_scipy_finds():
    rng = np.random.default_rng(0)
    generators = ["A", "B", "C", "D"]
    quality = {"A": 0.5, "B": 0.6, "C": 0.45, "D": 0.7}
    table = [
        {g: round(float(np.clip(quality[g] + rng.normal(0, 0.2), 0, 1)), 1) for g in generators}
        for _ in range(60)
    ]
    wins, games = outcome_tensors(table, generators)
    w, g = wins.sum(axis=0), games.sum(axis=0)
    ours = fit_strengths(w, g)
    w_reg = w + 0.5 * (g > 0)  # the same virtual tie between every two that met

    def negative_log_likelihood(s):
        diff = s[:, None] - s[None, :]
        return -float(np.sum(w_reg * -np.logaddexp(0, -diff)))

    best = optimize.minimize(negative_log_likelihood, np.zeros(4), method="BFGS").x
    assert ours == pytest.approx(best - best.mean(), abs=1e-5)
    records = [record(gen, f"p{c}", s) for c, row in enumerate(table) for gen, s in row.items()]
    ranking = compare(records, "A", n_boot=200).groups[0].judges[0].ranking
    assert ranking is not None and ranking.note is None
    by_name = {s.generator: s for s in ranking.strengths}
    assert ranking.strengths[0].generator == "D"
    assert by_name["A"].strength == 0.0
    assert by_name["D"].strength == pytest.approx(ours[3] - ours[0], abs=1e-6)
    assert by_name["D"].low <= by_name["D"].strength <= by_name["D"].high
    assert math.isclose(by_name["A"].p_beats_baseline, 0.5)


def test_two_generators_get_no_ranking():
    view = compare([record("A", "p", 0.1), record("B", "p", 0.2)], "A", n_boot=10).groups[0]
    assert view.judges[0].ranking is None


def test_the_command_prints_a_table_and_writes_json(tmp_path, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(record("A", f"p{i}", 0.4)) + "\n" for i in range(10)))
    second.write_text(
        "".join(json.dumps(record("B", f"p{i}", 0.5 + 0.01 * i)) + "\n" for i in range(10))
    )
    out = tmp_path / "cmp.json"
    status = main(["compare", str(first), str(second), "--baseline", "A", "--bootstrap", "100",
                   "--json", str(out)])  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "baseline A" in printed and "B " in printed and "10/0/0" in printed
    data = json.loads(out.read_text())
    (row,) = [d for d in data["groups"][0]["judges"][0]["differences"] if d["task"] == "all tasks"]
    assert row["generator"] == "B" and row["n"] == 10 and row["wins"] == 10
    assert main(["compare", str(first), "--baseline", "nobody"]) == 2
    assert "baseline 'nobody'" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "missing.jsonl"), "--baseline", "A"]) == 2
    assert main(["compare", str(first), str(second), "--baseline", "A", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["baseline"] == "A"


def test_the_baseline_defaults_to_the_first_generator_as_the_report_picks_it(tmp_path, capsys):
    from cigeval.report.compare import default_baseline
    from cigeval.results.run import load_run

    first, second = tmp_path / "b.jsonl", tmp_path / "a.jsonl"
    first.write_text("".join(json.dumps(record("B", f"p{i}", 0.5)) + "\n" for i in range(6)))
    second.write_text("".join(json.dumps(record("A", f"p{i}", 0.4)) + "\n" for i in range(6)))
    result = compare([first, second], n_boot=20)
    assert result.baseline == "B" and result.baseline_picked
    assert result.baseline == default_baseline([load_run(first), load_run(second)])
    assert main(["compare", str(first), str(second), "--bootstrap", "20"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("baseline B (the first generator in the input; choose another")
    assert main(["compare", str(first), "--bootstrap", "20"]) == 2  # one generator only
    assert "fewer than two generators" in capsys.readouterr().err


def test_generators_without_a_shared_condition_fold_into_one_line():
    records = [record("A", f"p{i}", 0.4) for i in range(6)]
    records += [record("B", f"p{i}", 0.6) for i in range(6)]
    records += [record("C", f"elsewhere {i}", 0.5) for i in range(3)]
    records += [record("D", "alone", 0.5, task="control_guided_ig")]
    table = compare(records, "A", n_boot=20).table()
    assert "-/-" not in table and " - [-, -]" not in table  # no row of dashes
    (line,) = [line for line in table.splitlines() if "no condition shared" in line]
    assert line.strip() == (
        "no condition shared with the baseline: C (3 condition(s)); D (1 condition(s))"
    )
    assert any(line.strip().startswith("B ") and "6/0/0" in line for line in table.splitlines())
