"""``cigeval meta preferences`` reproduces hand-computed accuracies on small files in each
layout: generic JSONL, GenAI-Bench outputs, EditReward-Bench results, MMRB2 judgements, and
the results of a cigeval pairwise run."""

from __future__ import annotations

import json

import pytest

from cigeval import ScriptedBackend
from cigeval.cli import main
from cigeval.meta.preferences import load_preferences, preference_report
from cigeval.results import ResultsWriter
from tests.rubrics.support import evaluator, image, image_hashes, sha, user_message


def write_lines(path, entries):
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def rows_by_task(path, **options):
    report = preference_report(load_preferences(path, **options), str(path), n_boot=200)
    return report, {row.task: row for row in report.rows}


GENERIC = [
    {"id": "1", "task": "t1", "human": "A", "judge": "A"},
    {"id": "2", "task": "t1", "human": "B", "judge": "A"},
    {"id": "3", "task": "t1", "human": "tie", "judge": "tie"},
    {"id": "4", "task": "t2", "human": "A", "judge": "tie"},
    {"id": "5", "task": "t2", "human_ranking": ["B", "A", "C"], "judge_ranking": ["B", "C", "A"]},
    {"id": "6", "task": "t2", "human_ranking": "C>B>A", "judge_ranking": [["C"], ["B"], ["A"]]},
    {"id": "7", "task": "t2", "human": "A", "judge": "A", "judge_orders": ["A", "B"],
     "inconsistent": True},
    {"id": "8", "task": "t2", "judge": "A"},  # no human label
]  # fmt: skip


def test_generic_layout_matches_hand_counts(tmp_path):
    report, rows = rows_by_task(write_lines(tmp_path / "prefs.jsonl", GENERIC))
    overall = rows["all tasks"]
    # comparisons: 1 ok, 2 wrong, 3 ok (tie), 4 wrong, 5: 2 of 3, 6: 3 of 3, 7 ok -> 8 of 11
    assert (overall.with_ties.correct, overall.with_ties.total) == (8, 11)
    assert overall.without_ties.value == pytest.approx(7 / 10)  # item 3's human tie left out
    assert overall.per_order.value == pytest.approx(1 / 2)  # item 7's two orders
    assert overall.groups[2].value == pytest.approx(3 / 5)
    assert overall.groups[3].value == pytest.approx(1 / 2)
    assert overall.inconsistent is not None and overall.inconsistent.value == 1.0
    assert rows["t1"].with_ties.value == pytest.approx(2 / 3)
    assert rows["t1"].without_ties.value == pytest.approx(1 / 2)
    assert rows["t2"].with_ties.value == pytest.approx(6 / 8)
    assert rows["t2"].groups[2].value == pytest.approx(1 / 2)
    low, high = overall.with_ties.low, overall.with_ties.high
    assert low is not None and high is not None and low <= 8 / 11 <= high
    assert any("no human label" in note for note in report.notes)
    assert [item.id for item in report.inconsistent] == ["7"]


GENAI = [
    ("leftvote", "[[A>B]]", True),
    ("leftvote", "[[A>>B]]", True),
    ("rightvote", "[[A>B]]", False),
    ("tievote", "[[A=B]]", True),
    ("tievote", "[[A=B=Bad]]", False),
    ("bothbad_vote", "[[A=B=Bad]]", True),
    ("bothbad_vote", None, False),
    ("rightvote", "[[B>A]]", True),
]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_genai_bench_outputs_match_their_own_correct_field(tmp_path, suffix):
    entries = [
        {"idx": i, "instruct_prompt": "x", "response": "...", "model_vote": model,
         "human_vote": human, "correct": correct}
        for i, (human, model, correct) in enumerate(GENAI)
    ]  # fmt: skip
    path = tmp_path / f"pairwise{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(entries))
    else:
        write_lines(path, entries)
    report, rows = rows_by_task(path)
    assert report.layout == "genai-bench"
    overall = rows["all tasks"]
    assert overall.with_ties.value == pytest.approx(5 / 8)  # their accuracy: mean(correct)
    assert overall.without_ties.value == pytest.approx(3 / 4)  # left/right votes only
    assert not any("disagrees" in note for note in report.notes)
    entries[0]["correct"] = False  # a file whose own field contradicts its votes is flagged
    write_lines(tmp_path / "bad.jsonl", entries)
    flagged, _ = rows_by_task(tmp_path / "bad.jsonl")
    assert any("1 entries' own 'correct' field disagrees" in note for note in flagged.notes)


def editreward(group, pair, human, model):
    return {"id": f"{group}_{pair}", "instruction": "x", "human_vote": human, "model_vote": model,
            "is_correct": human == model, "comparison_type": pair}  # fmt: skip


def test_editreward_bench_results_match_individual_and_group_accuracy(tmp_path):
    results = [
        editreward("g1", "AvsB", "A>B", "A>B"),
        editreward("g1", "AvsC", "C>A", "C>A"),
        editreward("g1", "BvsC", "C>B", "C>B"),
        editreward("g2", "AvsB", "A>B", "B>A"),
        editreward("g2", "AvsC", "A>C", "A>C"),
        editreward("g2", "BvsC", "B>C", "Unknown"),
        editreward("g3", "AvsB", "B>A", "B>A"),
        editreward("g3", "AvsC", "A>C", "A>C"),
        None,  # the scripts leave null where an example failed: g3 lacks B vs C
    ]
    path = tmp_path / "qwen_pairwise_3pair_hf.json"
    path.write_text(json.dumps({"data_type": "huggingface_3pair", "results": results}))
    report, rows = rows_by_task(path)
    overall = rows["all tasks"]
    assert report.layout == "editreward-bench" and overall.items == 3
    assert overall.with_ties.value == pytest.approx(6 / 8)  # their individual accuracy
    assert overall.groups == {3: overall.groups[3]}
    assert overall.groups[3].value == pytest.approx(1 / 3)  # only g1 has all three right
    two_pair = [
        {"id": "a", "human_vote": "A=B", "model_vote": "A=B", "comparison_type": None},
        {"id": "b", "human_vote": "A>B", "model_vote": "A=B", "comparison_type": None},
        {"id": "c", "human_vote": "B>A", "model_vote": "B>A", "comparison_type": None},
    ]
    (tmp_path / "two.json").write_text(
        json.dumps({"data_type": "huggingface_2pair", "results": two_pair})
    )
    _, rows = rows_by_task(tmp_path / "two.json")
    assert rows["all tasks"].with_ties.value == pytest.approx(2 / 3)
    assert rows["all tasks"].without_ties.value == pytest.approx(1 / 2)
    assert rows["all tasks"].groups[2].value == pytest.approx(2 / 3)


def test_mmrb2_judgements_match_their_per_order_accuracy(tmp_path):
    bench = tmp_path / "edit.json"
    bench.write_text(json.dumps({"pairs": [
        {"id": "p1", "chosen": "A", "prompt_source": "emu-edit"},
        {"id": "p2", "chosen": "B", "prompt_source": "emu-edit"},
        {"id": "p3", "chosen": "A", "prompt_source": "hq-edit"},
        {"id": "p4", "chosen": "B", "prompt_source": "hq-edit"},
    ]}))  # fmt: skip

    def judged(forward, reverse):
        return {"forward": [{"judgement": forward, "evaluator": "x", "metadata": {}}],
                "reverse": [{"judgement": reverse, "evaluator": "x", "metadata": {}}]}  # fmt: skip

    judgements = tmp_path / "judge_edit.json"
    judgements.write_text(json.dumps({
        "p1": judged("A", "B"),  # reverse shows B first: "B" there means A, right twice
        "p2": judged("A", "A"),  # wrong forward, right reverse: inconsistent
        "p3": judged("B", ""),  # wrong forward, no reverse answer (not counted, as MMRB2)
    }))  # fmt: skip
    report, rows = rows_by_task(judgements, benchmark=bench)
    overall = rows["all tasks"]
    assert report.layout == "mmrb2" and overall.items == 3 and "edit" in rows
    assert overall.per_order.value == pytest.approx(3 / 5)  # MMRB2's accuracy
    assert overall.without_ties.value == pytest.approx(1 / 3)  # p2 kept as a tie
    assert [item.id for item in report.inconsistent] == ["p2"]
    assert any("1 benchmark pair(s) have no judgement" in note for note in report.notes)


def test_a_pairwise_run_with_human_labels_is_scored_end_to_end(tmp_path):
    red, green = image((220, 20, 20)), image((20, 220, 20))

    def prefers_red(request):
        shown = image_hashes(user_message(request))
        position = shown.index(sha(red)) + 1
        return json.dumps({"ranking": f"{position} > {3 - position}"})

    samples = [
        {"id": "s1", "task": "text_guided_ig", "prompt": "a red car",
         "candidates": {"A": red, "B": green}, "human": "A"},
        {"id": "s2", "task": "text_guided_ig", "prompt": "a green car",
         "candidates": {"A": green, "B": red}, "human": "A"},
        {"id": "s3", "task": "text_guided_ig", "prompt": "a car",
         "candidates": {"A": red, "B": green}, "human": "tie"},
    ]  # fmt: skip
    scores = evaluator(ScriptedBackend(prefers_red), "pairwise").evaluate_many(samples)
    path = tmp_path / "pairwise.jsonl"
    with ResultsWriter(path) as writer:
        for score in scores:
            writer.write(score)
    report, rows = rows_by_task(path)
    overall = rows["all tasks"]
    assert report.layout == "cigeval"
    assert overall.with_ties.value == pytest.approx(1 / 3)  # s1 right; s2 wrong; s3 not a tie
    assert overall.without_ties.value == pytest.approx(1 / 2)
    assert overall.per_order.value == pytest.approx(2 / 4)  # both orders of s1 and s2
    assert overall.inconsistent is not None and overall.inconsistent.value == 0.0


def test_the_command_prints_the_table_and_refuses_unusable_input(tmp_path, capsys):
    path = write_lines(tmp_path / "prefs.jsonl", GENERIC)
    assert main(["meta", "preferences", str(path), "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "generic layout" in out and "0.727" in out and "K=3" in out
    assert main(["meta", "preferences", str(path), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"][0]["accuracy_without_ties"]["value"] == pytest.approx(0.7)
    judgements = tmp_path / "judge.json"
    judgements.write_text(json.dumps({"p1": {"forward": [{"judgement": "A"}]}}))
    assert main(["meta", "preferences", str(judgements)]) == 2
    assert "--benchmark" in capsys.readouterr().err
    assert main(["meta", "preferences", str(tmp_path / "nothing.jsonl")]) == 2


def test_preference_records_of_different_settings_are_never_pooled(tmp_path, capsys):
    def record(sid, aggregate):
        return {"id": sid, "task": "t", "status": "ok", "score": 1.0, "human": "A",
                "config": {"aggregate": aggregate},
                "details": {"candidates": ["A", "B"], "ranking": [["A"], ["B"]],
                            "consistent": True}}  # fmt: skip

    path = write_lines(tmp_path / "mixed.jsonl", [record("1", "min"), record("2", "mean")])
    assert main(["meta", "preferences", str(path)]) == 2
    assert "2 different settings" in capsys.readouterr().err
    same = write_lines(tmp_path / "same.jsonl", [record("1", "min"), record("2", "min")])
    assert main(["meta", "preferences", str(same)]) == 0
