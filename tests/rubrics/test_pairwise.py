"""Samples with several candidates, and the two ways to judge them: the direct comparative
judge (rubric pairwise, every presentation order asked) and pointwise scoring then ranking."""

from __future__ import annotations

import json
from itertools import permutations

import pytest

from cigeval import InputError, ScriptedBackend
from cigeval.config import EnsembleConfig, RunConfig
from cigeval.errors import ParseError
from cigeval.evaluation import Evaluator
from cigeval.messages import ModelRequest
from cigeval.rubrics.pairwise import parse_pairwise_reply
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from tests.rubrics.support import COLOURS, evaluator, image, image_hashes, sha, user_message

RED, GREEN, BLUE = image((220, 20, 20)), image((20, 220, 20)), image((20, 20, 220))


def candidates_sample(candidates, task="text_guided_ie", **fields):
    """A dict sample whose candidates are PIL images (labels may name generators)."""
    data = {"id": "pair-1", "task": task, "candidates": candidates, **fields}
    if task == "text_guided_ie":
        data.setdefault("instruction", "make the car red")
        data["images"] = {"source": image(COLOURS["source"])}
    else:
        data.setdefault("prompt", "a red car")
    return data


def shown_candidates(request: ModelRequest, palette: dict[str, str]) -> list[str]:
    """The candidate labels in the order their images appear in the request."""
    return [palette[h] for h in image_hashes(user_message(request)) if h in palette]


def answer(ranking, scores=None) -> str:
    """A pairwise reply; without ``scores`` the optional scores are left out."""
    data = {"reasoning": "compared", "ranking": ranking}
    return json.dumps(data if scores is None else {**data, "scores": scores})


def prefers(colour_sha: str):
    """A judge that ranks the candidate with this image first wherever it is shown, the
    others tied."""

    def reply(request: ModelRequest) -> str:
        hashes = image_hashes(user_message(request))
        shown = hashes[-(len(hashes) - 1) :] if "Input:" in request_text(request) else hashes
        position = shown.index(colour_sha) + 1
        others = [str(n) for n in range(1, len(shown) + 1) if n != position]
        scores = {str(n): (9 if n == position else 4) for n in range(1, len(shown) + 1)}
        return answer(f"{position} > {' = '.join(others)}", scores)  # the rest tie

    return reply


# -- samples ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"candidates": {"A": RED}}, "2 to 8 images"),
        ({"candidates": {"A": RED, "tie": GREEN}}, "reserved"),
        ({"candidates": {"A": RED, "B>C": GREEN}}, "reserved"),
        ({"candidates": {"A": RED, "B": GREEN}, "human": "C"}, "unknown candidate"),
        ({"candidates": {"A": RED, "B": GREEN, "C": BLUE}, "human": "A"}, "whole ranking"),
        ({"candidates": {"A": RED, "B": GREEN}, "human": "A > A"}, "more than once"),
    ],
)
def test_bad_candidates_are_clear_errors_naming_the_sample(change, message):
    with pytest.raises(InputError, match=message) as caught:
        sample_from_dict(candidates_sample(**{"candidates": change.pop("candidates")}, **change))
    assert "pair-1" in str(caught.value)


def test_candidates_and_an_output_together_are_refused():
    data = candidates_sample({"A": RED, "B": GREEN})
    data["images"]["output"] = BLUE
    with pytest.raises(InputError, match=r"no images\.output"):
        sample_from_dict(data)


def test_a_ranking_label_and_a_tie_are_accepted():
    sample = sample_from_dict(candidates_sample({"A": RED, "B": GREEN, "C": BLUE}, human="C>A=B"))
    assert sample.human == "C>A=B"
    assert sample_from_dict(candidates_sample({"A": RED, "B": GREEN}, human="tie")).human == "tie"


def test_the_cigeval_rubric_points_a_candidates_sample_to_the_preference_rubrics():
    backend = ScriptedBackend(rule_judge())
    score = evaluator(backend, "cigeval").evaluate(candidates_sample({"A": RED, "B": GREEN}))
    assert score.status == "error" and "rubric pairwise or pointwise" in (score.error or "")
    assert backend.requests == []


# -- the direct comparative judge -------------------------------------------------------


def test_every_order_is_asked_and_a_position_free_preference_is_kept():
    backend = ScriptedBackend(prefers(sha(GREEN)))
    labels = {"sdxl": RED, "flux": GREEN, "dalle": BLUE}  # labels name generators
    score = evaluator(backend, "pairwise").evaluate(candidates_sample(labels))
    palette = {sha(RED): "sdxl", sha(GREEN): "flux", sha(BLUE): "dalle"}
    shown = [tuple(shown_candidates(r, palette)) for r in backend.requests]
    assert sorted(shown) == sorted(permutations(["sdxl", "flux", "dalle"]))  # 3! orders, once
    assert score.ok and score.value == 1.0
    details = score.details
    assert details["preference"] == "flux" and details["consistent"] is True
    assert details["ranking"][0] == ["flux"] and len(details["orders"]) == 6
    assert details["scores"]["flux"] == pytest.approx(0.9)
    for request in backend.requests:  # the judge never reads a label
        text = request_text(request)
        assert "sdxl" not in text and "flux" not in text and "dalle" not in text
        # the source comes first, then the candidates
        assert image_hashes(user_message(request))[0] == sha(image(COLOURS["source"]))
    assert set(score.input_images) == {"source", "candidate:sdxl", "candidate:flux",
                                       "candidate:dalle"}  # fmt: skip


def test_an_order_dependent_judge_yields_a_tie_marked_inconsistent():
    backend = ScriptedBackend(lambda request: answer("1 > 2", {"1": 8, "2": 3}))
    score = evaluator(backend, "pairwise").evaluate(candidates_sample({"A": RED, "B": GREEN}))
    palette = {sha(RED): "A", sha(GREEN): "B"}
    assert sorted(tuple(shown_candidates(r, palette)) for r in backend.requests) == [
        ("A", "B"),
        ("B", "A"),
    ]
    details = score.details
    assert score.ok and details["preference"] == "tie" and details["consistent"] is False
    assert details["ranking"] == [["A", "B"]]
    assert sorted(o["ranking"][0][0] for o in details["orders"]) == ["A", "B"]  # as answered
    assert score.value == 0.5  # half the orders gave the most common ranking
    assert details["scores"] == {"A": pytest.approx(0.55), "B": pytest.approx(0.55)}


def test_a_judged_tie_in_every_order_is_a_consistent_tie():
    backend = ScriptedBackend(lambda request: answer("1 = 2"))
    score = evaluator(backend, "pairwise").evaluate(candidates_sample({"A": RED, "B": GREEN}))
    assert score.details["preference"] == "tie" and score.details["consistent"] is True


def test_rotations_ask_each_candidate_once_in_each_position():
    backend = ScriptedBackend(prefers(sha(BLUE)))
    four = {"A": RED, "B": GREEN, "C": BLUE, "D": image((120, 120, 120))}
    with_rotations = evaluator(backend, "pairwise", rubric_options={"orders": "rotations"})
    score = with_rotations.evaluate(candidates_sample(four, task="text_guided_ig"))
    assert len(backend.requests) == 4 and score.details["preference"] == "C"
    five = {**four, "E": image((60, 60, 60))}
    failed = evaluator(ScriptedBackend([]), "pairwise").evaluate(
        candidates_sample(five, task="text_guided_ig")
    )
    assert failed.status == "error" and "rotations" in (failed.error or "")


def test_unreadable_replies_are_asked_again_then_fail_the_sample():
    backend = ScriptedBackend(["no json here", answer("2 > 1"), answer("1 > 2")])
    score = evaluator(backend, "pairwise").evaluate(
        candidates_sample({"A": RED, "B": GREEN}, task="text_guided_ig")
    )
    assert score.ok and len(backend.requests) == 3
    never = ScriptedBackend(lambda request: answer("1 > 3"))
    failed = evaluator(never, "pairwise", max_parse_retries=0).evaluate(
        candidates_sample({"A": RED, "B": GREEN}, task="text_guided_ig")
    )
    assert failed.status == "error" and "unknown candidate" in (failed.error or "")


def test_reply_parsing_accepts_words_and_lists_and_names_problems():
    assert parse_pairwise_reply('{"ranking": "Candidate 2 > Candidate 1"}', 2).ranking == (
        ("2",),
        ("1",),
    )
    assert parse_pairwise_reply('{"ranking": [[1, 3], 2]}', 3).ranking == (("1", "3"), ("2",))
    assert parse_pairwise_reply('{"ranking": "tie"}', 2).ranking == (("1", "2"),)
    with pytest.raises(ParseError, match="leaves out 3"):
        parse_pairwise_reply('{"ranking": "1 > 2"}', 3)
    with pytest.raises(ParseError, match='"scores" leaves out'):
        parse_pairwise_reply('{"ranking": "1 > 2", "scores": {"1": 3}}', 2)


def test_an_ensemble_keeps_a_ranking_only_when_the_judges_agree():
    def run(first, second):
        backends = [ScriptedBackend(first, name="x"), ScriptedBackend(second, name="y")]
        return Evaluator(
            backends, rubric="pairwise", run_config=RunConfig(use_cache=False, preflight=False),
            ensemble=EnsembleConfig(),
        ).evaluate(candidates_sample({"A": RED, "B": GREEN}))  # fmt: skip

    agree = run(prefers(sha(RED)), prefers(sha(RED)))
    assert agree.details["preference"] == "A" and agree.details["judges_agree"] is True
    split = run(prefers(sha(RED)), prefers(sha(GREEN)))
    assert split.details["preference"] == "tie" and split.details["judges_agree"] is False
    assert [j["ranking"][0] for j in split.details["judgments"]] == [["A"], ["B"]]


# -- pointwise ---------------------------------------------------------------------------


def scores_by_image(by_sha: dict[str, float]):
    """rule_judge scoring every sub-question of an output by which image it is."""

    def reply(request: ModelRequest) -> str:
        shown = [h for h in image_hashes(user_message(request)) if h in by_sha]
        score = by_sha[shown[-1]] if shown else 7
        return rule_judge(default_score=score)(request)

    return reply


def test_pointwise_scores_each_candidate_alone_and_ranks_them():
    backend = ScriptedBackend(scores_by_image({sha(RED): 8, sha(GREEN): 5, sha(BLUE): 8}))
    sample = candidates_sample({"A": RED, "B": GREEN, "C": BLUE}, task="text_guided_ig")
    score = evaluator(backend, "pointwise").evaluate(sample)
    details = score.details
    assert score.ok and details["scores"] == {"A": 0.8, "B": 0.5, "C": 0.8}
    assert details["ranking"] == [["A", "C"], ["B"]] and details["preference"] == "tie"
    assert details["consistent"] is True and score.value == pytest.approx(0.7)
    assert {s.question_id for s in score.sub_scores} == {
        "A/prompt_following",
        "B/prompt_following",
        "C/prompt_following",
    }
    for request in backend.requests:  # one candidate per request, never two
        assert sum(h in {sha(RED), sha(GREEN), sha(BLUE)} for h in image_hashes(
            user_message(request))) <= 1  # fmt: skip
    two = evaluator(ScriptedBackend(scores_by_image({sha(RED): 6, sha(GREEN): 9})), "pointwise")
    pair = two.evaluate(candidates_sample({"A": RED, "B": GREEN}, task="text_guided_ig"))
    assert pair.details["preference"] == "B"


# -- through the command line --------------------------------------------------------------


def test_a_samples_file_of_candidates_through_evaluate_meta_and_report(
    tmp_path, monkeypatch, capsys
):
    from cigeval.cli import main
    from cigeval.testing.openai_server import FakeOpenAIServer
    from cigeval.testing.samples_factory import make_image, write_jsonl
    from tests.cli_support import evaluate_cli

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    red, green = (
        make_image(tmp_path / "red.png", "red"),
        make_image(tmp_path / "green.png", "green"),
    )
    samples = write_jsonl(tmp_path / "samples.jsonl", [
        {"id": "p1", "task": "text_guided_ig", "prompt": "a red field",
         "candidates": {"A": red, "B": green}, "human": "A"},
        {"id": "p2", "task": "text_guided_ig", "prompt": "a green field",
         "candidates": {"A": red, "B": green}, "human": "B"},
        {"id": "bad", "task": "text_guided_ig", "prompt": "x", "candidates": {"A": red}},
    ])  # fmt: skip
    out = tmp_path / "pairwise.jsonl"
    with FakeOpenAIServer(lambda body: answer("1 > 2")) as server:  # always the first shown
        assert evaluate_cli(server, samples, out, "--rubric", "pairwise") == 1  # one bad line
        assert len(server.requests) == 4  # two orders for each of the two good samples
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["bad"]["status"] == "error" and "2 to 8 images" in records["bad"]["error"]
    assert records["p1"]["details"]["consistent"] is False
    assert records["p1"]["details"]["preference"] == "tie"
    capsys.readouterr()
    assert main(["meta", "preferences", str(out), "--json", "-"]) == 0
    overall = json.loads(capsys.readouterr().out)["rows"][0]
    assert overall["accuracy_with_ties"]["value"] == 0.0  # both kept as ties, humans chose
    assert overall["per_order_accuracy"]["value"] == 0.5  # each order right once
    page = tmp_path / "page.html"
    assert main(["report", str(out), "-o", str(page), "--bootstrap", "20"]) == 0
    assert "Pairs whose presentation orders disagreed: 2 of 2" in page.read_text()
