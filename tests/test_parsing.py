"""Reply parsing: lenient in form, strict in content."""

from __future__ import annotations

import pytest

from cigeval.agent.plan import parse_plan
from cigeval.errors import ParseError
from cigeval.parsing import (
    UnfinishedJSON,
    extract_json,
    parse_judgement,
    parse_score,
    parse_yes_no,
)
from cigeval.rubrics.factor_parsing import FactorReplySpec, parse_factor_reply
from cigeval.rubrics.viescore import parse_score_list
from cigeval.tasks import get_task
from cigeval.tools import registered_tools


@pytest.mark.parametrize(
    ("text", "score", "reasoning"),
    [
        ('{"score": 7, "reasoning": "good"}', 7, "good"),
        ('```json\n{"score": "8/10", "reasoning": "fine"}\n```', 8, "fine"),
        ('Here you go:\n{"score": "7.5", "reasoning": "ok"} Hope it helps!', 7.5, "ok"),
        ("{“score”: 6, “reasoning”: “smart quotes”}", 6, "smart quotes"),
        ('{"Score": 3, "Reasoning": "capitalised keys"}', 3, "capitalised keys"),
        ("Score: 4\nReasoning: the dog is missing", 4, "the dog is missing"),
        ("I would rate this 9/10 overall.", 9, "I would rate this 9/10 overall."),
        ('{"score": [5], "reasoning": "list of one"}', 5, "list of one"),
    ],
)
def test_judgements_in_the_forms_models_write(text, score, reasoning):
    assert parse_judgement(text) == (score, reasoning)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no number here",
        '{"score": 11, "reasoning": "x"}',
        '{"score": -1}',
        '{"reasoning": "forgot the score"}',
        '{"score": "high"}',
        '{"score": null}',
        '{"score": true}',
        "rating: 15/10",
    ],
)
def test_unusable_judgements_raise_parse_error(text):
    with pytest.raises(ParseError):
        parse_judgement(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"score": "1',  # the case: a "10" cut at the token limit
        '{"score": 1',
        '{"score": 7, "reasoning": "the red squ',
        '{"score": 8, "reasoning": "the "red" squ',  # cut and malformed
        '{"result": {"score": 3, "reasoning": "x"}, "note": "cu',  # a whole value inside
        '```json\n{"score": "1\n```',  # a fence closed around a fragment
        'Sure: {"score": 9, "reasoning": "fine", "extra": tru',
    ],
)
def test_a_fragment_of_json_is_never_a_score(text):
    with pytest.raises(UnfinishedJSON, match="never closed"):
        parse_judgement(text)


def test_a_complete_value_before_a_fragment_still_counts():
    assert parse_judgement('{"score": 3, "reasoning": "a"} and {"score": 4, "rea') == (3, "a")
    assert extract_json('[1, 2] then {"a": [3', list) == [1, 2]
    with pytest.raises(UnfinishedJSON):
        extract_json('[1, 2] then {"a": [3', dict)


def test_prose_scores_must_close_their_quotes():
    assert parse_judgement('score: "7" overall')[0] == 7
    with pytest.raises(ParseError):
        parse_judgement('Score: "1')


def test_rubric_and_plan_parsers_refuse_fragments_too():
    with pytest.raises(UnfinishedJSON):
        parse_score_list('{"score": [3, 4], "reasoning": "bl', 2)
    spec = FactorReplySpec("s1", "online_factor_results", ("quality",), (1, 7), None)
    cut = '{"image_id": "s1", "online_factor_results": {"quality": {"score": 6, "justif'
    with pytest.raises(UnfinishedJSON):
        parse_factor_reply(cut, spec)
    with pytest.raises(UnfinishedJSON):
        plan('[{"task_id": "1", "used": "no"}, {"task_id": "2", "used": "no"}, {"task_')


def test_parse_score_rescales_other_denominators_and_checks_integers():
    assert parse_score("4/5") == 8
    assert parse_score("3 out of 10") == 3
    assert parse_score(5, 1, 7, integer=True) == 5
    with pytest.raises(ParseError, match="integer"):
        parse_score(5.5, 1, 7, integer=True)
    with pytest.raises(ParseError, match="outside"):
        parse_score(8, 1, 7, integer=True)


def test_extract_json_prefers_the_requested_kind():
    text = 'First {"note": 1} then [1, 2, 3]'
    assert extract_json(text, list) == [1, 2, 3]
    assert extract_json(text, dict) == {"note": 1}
    with pytest.raises(ParseError):
        extract_json("nothing", dict)


def test_yes_no():
    assert parse_yes_no("Yes") is True and parse_yes_no("no") is False
    assert parse_yes_no(True) is True
    with pytest.raises(ParseError):
        parse_yes_no("maybe")


QUESTIONS = get_task("multi_concept_ic").sub_questions


def plan(text):
    return parse_plan(text, QUESTIONS, registered_tools())


def test_plan_accepts_spellings_and_matches_by_id():
    result = plan(
        '[{"task_id": 3, "used": "no", "tool": "None"},'
        ' {"task_id": "Task 1", "used": "yes", "tool": "grounding", "query": "the dog"},'
        ' {"task_id": "concept_2_similarity", "used": "Yes", "tool": "scene_graph"}]'
    )
    assert result["concept_1_similarity"].tool == "Grounding"
    assert result["concept_1_similarity"].query == "the dog"
    assert result["concept_2_similarity"].tool == "Scene Graph"
    assert result["prompt_following"].tool is None


def test_plan_used_no_overrides_a_named_tool():
    result = plan(
        '[{"task_id": "1", "used": "no", "tool": "Grounding"},'
        ' {"task_id": "2", "used": "no", "tool": "None"}, {"task_id": "3", "used": "no"}]'
    )
    assert all(item.tool is None for item in result.values())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[{"task_id": "1", "used": "no"}, {"task_id": "2", "used": "no"}]',
            "no entry for task_id 3",
        ),
        ('[{"task_id": "9", "used": "no"}]', "unknown task_id"),
        (
            '[{"task_id": "1", "used": "yes", "tool": "Magic"},'
            ' {"task_id": "2"}, {"task_id": "3"}]',
            "unknown tool",
        ),
        (
            '[{"task_id": "1"}, {"task_id": "1"}, {"task_id": "2"}, {"task_id": "3"}]',
            "more than once",
        ),
        ("I will use grounding for everything", "JSON"),
    ],
)
def test_plan_errors_name_the_problem(text, message):
    with pytest.raises(ParseError, match=message):
        plan(text)


def test_loose_scores_do_not_take_a_prefix_of_a_longer_number():
    with pytest.raises(ParseError):
        parse_judgement("score: 1e999")
    assert parse_judgement("score: 7. The dog is there.")[0] == 7


def test_scanning_finds_values_after_and_inside_others():
    assert extract_json('[note] and [1, 2] then {"score": 3}', dict) == {"score": 3}
    assert extract_json('[[1], {"inner": {"deep": 1}}, {"late": 2}]', dict) == {
        "inner": {"deep": 1}
    }
    prose = "See [1], [2] and [a note]. " * 2000 + '{"score": 4}'
    assert extract_json(prose, dict) == {"score": 4}
    # A value longer than the first window, after an unterminated one.
    long = '{"score": 5, "reasoning": "' + "x" * 50_000 + '"}'
    assert extract_json('{"cut": [1, 2 ' + long, dict)["score"] == 5


def _hostile_replies(n: int) -> dict[str, str]:
    """Replies of about ``n`` characters that made the scan quadratic."""
    return {
        "brackets inside strings": '["[' * (n // 3),
        "deep unterminated lists": "[" * 900 + "1," * (n // 2),
        "deep lists, an object wanted": "[" * 900 + "1," * (n // 2) + "1" + "]" * 900,
    }


@pytest.fixture
def decoded_lengths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many characters each call of the JSON decoder was handed, as the test runs."""
    import json

    read: list[int] = []
    original = json.JSONDecoder.raw_decode

    def counting(self, s, idx=0):
        read.append(len(s) - idx)
        return original(self, s, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    return read


@pytest.mark.parametrize("name", list(_hostile_replies(10)))
def test_hostile_replies_are_a_parse_error_read_a_few_times_at_most(name, decoded_lengths):
    read = decoded_lengths
    text = _hostile_replies(200_000)[name]
    with pytest.raises(ParseError):
        extract_json(text, dict)
    # Each attempt used to decode from its bracket to the end of the reply, and build an
    # error message from its start: quadratic. Now the decoder is handed a few times the
    # reply's length in all. (Timings: benchmarks/parsing.py.)
    assert sum(read) <= 12 * len(text)


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ('{"score": 3, "reasoning": "fine", "score": 9}', "repeats the key 'score'"),
        ('{"score": 2, "reasoning": "a"} {"score": 9, "reasoning": "b"}', "two different JSON"),
        ('```json\n{"score": 2}\n```\nor rather ```json\n{"score": 8}\n```', "two different JSON"),
        ('{"Score": 3, "score": 4}', "gives 'score' twice"),
        ("score: 3, then on reflection score: 9", "two different scores"),
    ],
)
def test_an_ambiguous_reply_is_an_error_saying_why(reply: str, why: str) -> None:
    from cigeval.parsing import AmbiguousReply

    with pytest.raises(AmbiguousReply, match=why) as raised:
        parse_judgement(reply)
    assert raised.value.reply == reply
    assert isinstance(raised.value, ParseError)  # so the session asks again


@pytest.mark.parametrize(
    "reply",
    [
        '{"score": 3, "score": 3, "reasoning": "said twice, the same"}',
        '{"score": 2} and again: {"score": 2}',
        '```json\n{"score": 6}\n```\n{"score": 6}',
        '{"score": 5, "reasoning": "ok"} then a cut {"score": 6',
        '{"score": 4, "reasoning": "nested {\\"score\\": 9} in a string"}',
    ],
)
def test_one_answer_given_once_or_repeated_the_same_is_not_ambiguous(reply: str) -> None:
    assert parse_judgement(reply)[0] in {2, 3, 4, 5, 6}


def test_a_rubric_reply_with_a_repeated_key_is_ambiguous() -> None:
    spec = FactorReplySpec("img", "results", ("a",), justification_words=None)
    reply = '{"image_id": "img", "results": {"a": {"score": 2, "justification": "x", "score": 7}}}'
    with pytest.raises(ParseError, match="repeats the key 'score'"):
        parse_factor_reply(reply, spec)


def test_the_ambiguity_check_stays_linear(decoded_lengths):
    read = decoded_lengths
    text = "[1] " * 50_000 + '{"score": 3, "reasoning": "after many lists"}'
    assert parse_judgement(text)[0] == 3
    # each list is decoded from a small window, once by the search and once by the check
    # for a second answer; the whole reply from each bracket would be quadratic
    assert sum(read) <= 40 * len(text)
