"""VIEScore: SC and PQ lists, min and sqrt, per-task questions and images, errors."""

from __future__ import annotations

import math

import pytest

from cigeval.backends.scripted import ScriptedBackend
from cigeval.errors import ConfigError
from cigeval.meta.scores import records_to_frame
from cigeval.prompts import render
from cigeval.rubrics.viescore import ViescoreRubric, parse_score_list
from cigeval.tasks import get_task

from .support import (
    COLOURS,
    all_text,
    evaluator,
    image,
    image_hashes,
    make_run,
    make_sample,
    reply,
    sha,
    user_message,
)

RUBRIC = ViescoreRubric()


def sc_pq(sc: list[float], pq: list[float]) -> list[str]:
    return [
        reply({"score": sc, "reasoning": "sc why"}),
        reply({"score": pq, "reasoning": "pq why"}),
    ]


async def test_text_guided_ie_dimensions_and_sub_scores():
    backend = ScriptedBackend(sc_pq([8, 6], [9, 4]))
    score = await RUBRIC.evaluate(make_run(make_sample(), backend))

    assert score.status == "ok"
    assert score.dimensions == pytest.approx({"SC": 0.6, "PQ": 0.4, "O": math.sqrt(0.24)})
    assert score.value == pytest.approx(math.sqrt(0.24))
    assert [(s.question_id, s.score) for s in score.sub_scores] == [
        ("edit_success", 8),
        ("over_editing", 6),
        ("pq_naturalness", 9),
        ("pq_artifacts", 4),
    ]
    assert score.sub_scores[0].reasoning == "sc why"
    assert score.sub_scores[3].reasoning == "pq why"

    sc_request, pq_request = backend.requests
    assert image_hashes(user_message(sc_request)) == [
        sha(image(COLOURS["source"])),
        sha(image(COLOURS["output"])),
    ]
    sc_text = all_text(sc_request)
    # the agentic rubric's own rules for both sub-questions, in order
    assert sc_text.index(render("edit_success.j2")) < sc_text.index(render("over_editing.j2"))
    assert "ASPECT 1 (edit_success)" in sc_text and "ASPECT 2 (over_editing)" in sc_text
    assert "exactly 2 number(s)" in sc_text
    assert "Editing instruction: Replace the snowy ground" in sc_text
    assert image_hashes(user_message(pq_request)) == [sha(image(COLOURS["output"]))]
    assert "naturalness" in all_text(pq_request) and "artifacts" in all_text(pq_request)


@pytest.mark.parametrize("primary", ["SC", "PQ", "O"])
async def test_primary_option_picks_the_value(primary):
    backend = ScriptedBackend(sc_pq([5, 7], [10, 10]))
    run = make_run(make_sample(), backend, rubric_options={"primary": primary})
    score = await RUBRIC.evaluate(run)
    assert score.value == pytest.approx(score.dimensions[primary])
    assert score.details["primary"] == primary


async def test_unknown_option_is_a_config_error():
    run = make_run(make_sample(), ScriptedBackend([]), rubric_options={"primry": "SC"})
    with pytest.raises(ConfigError, match="primry"):
        await RUBRIC.evaluate(run)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"score": [8], "reasoning": "x"}, "lists 1 number(s) but exactly 2 are required"),
        ({"score": [8, 6, 7], "reasoning": "x"}, "lists 3 number(s) but exactly 2"),
        ({"score": [8, 11], "reasoning": "x"}, "item 2: score 11 is outside the allowed range"),
        ({"score": 8, "reasoning": "x"}, "must be a JSON list"),
    ],
)
async def test_wrong_sc_list_is_reasked(bad, expected):
    backend = ScriptedBackend([reply(bad), *sc_pq([7, 7], [7, 7])])
    score = await RUBRIC.evaluate(make_run(make_sample(), backend))
    assert score.status == "ok" and score.value == pytest.approx(0.7)
    assert len(backend.requests) == 3
    assert expected in backend.requests[1].messages[-1].text_content()
    assert backend.requests[1].messages[-2].text_content() == reply(bad)


async def test_prose_around_the_list_is_accepted():
    text = reply({"score": [3, 9], "reasoning": "x"}, prose="My evaluation:")
    backend = ScriptedBackend([text, reply({"score": [9, 9]})])
    score = await RUBRIC.evaluate(make_run(make_sample(), backend))
    assert score.dimensions["SC"] == pytest.approx(0.3)


async def test_pq_retries_exhausted_give_an_error_without_numbers():
    bad = reply({"score": [5], "reasoning": "only one"})
    backend = ScriptedBackend([sc_pq([7, 7], [7, 7])[0], bad, bad, bad])
    score = await RUBRIC.evaluate(make_run(make_sample(), backend))
    assert score.status == "error"
    assert (score.error or "").startswith("ParseError: rubric:viescore:PQ")
    assert "exactly 2 are required" in (score.error or "")
    assert score.value is None and score.dimensions == {} and score.sub_scores == []
    assert score.details == {"failed_dimension": "PQ"}


def _task_sample(task: str):
    c = COLOURS
    images = {
        "text_guided_ig": {"output": image(c["output"])},
        "mask_guided_ie": {
            "source": image(c["source"]),
            "mask": image(c["mask"]),
            "output": image(c["output"]),
        },
        "text_guided_ie": {"source": image(c["source"]), "output": image(c["output"])},
        "subject_driven_ig": {"subject": image(c["subject"]), "output": image(c["output"])},
        "subject_driven_ie": {
            "source": image(c["source"]),
            "subject": image(c["subject"]),
            "output": image(c["output"]),
        },
        "multi_concept_ic": {
            "subjects": [image(c["subject"]), image(c["control"])],
            "output": image(c["output"]),
        },
        "control_guided_ig": {"control": image(c["control"]), "output": image(c["output"])},
    }[task]
    return make_sample(
        task,
        images=images,
        prompt="a dog on a beach",
        subject="dog",
        concepts=["dog", "hat"],
        control_type="canny",
    )


EXPECTED_IMAGES = {
    "text_guided_ig": ["output"],
    "mask_guided_ie": ["source", "output"],
    "text_guided_ie": ["source", "output"],
    "subject_driven_ig": ["subject", "output"],
    "subject_driven_ie": ["subject", "output", "source"],
    "multi_concept_ic": ["subject", "output", "control"],
    "control_guided_ig": ["control", "output"],
}


@pytest.mark.parametrize("task", list(EXPECTED_IMAGES))
def test_every_task_end_to_end(task):
    questions = get_task(task).sub_questions
    scores = [float(9 - i) for i in range(len(questions))]
    backend = ScriptedBackend(sc_pq(scores, [8, 9]))
    score = evaluator(backend, "viescore").evaluate(_task_sample(task))

    assert score.status == "ok", score.error
    assert [s.question_id for s in score.sub_scores] == [
        *(q.id for q in questions),
        "pq_naturalness",
        "pq_artifacts",
    ]
    assert score.dimensions["SC"] == pytest.approx(min(scores) / 10)
    assert score.dimensions["PQ"] == pytest.approx(0.8)
    sc_message = user_message(backend.requests[0])
    # images deduplicated, in first-use order over the sub-questions
    assert image_hashes(sc_message) == [sha(image(COLOURS[r])) for r in EXPECTED_IMAGES[task]]
    text = sc_message.text_content()
    for number, question in enumerate(questions, start=1):
        assert f"ASPECT {number} ({question.id})" in text
    assert f"exactly {len(questions)} number(s)" in text


def test_side_by_side_concepts_are_shown_once():
    sample = make_sample(
        "multi_concept_ic",
        prompt="a dog in a hat",
        concepts=["dog", "hat"],
        images={"subject": image(COLOURS["subject"]), "output": image(COLOURS["output"])},
    )
    backend = ScriptedBackend(sc_pq([5, 6, 7], [8, 8]))
    score = evaluator(backend, "viescore").evaluate(sample)
    assert score.status == "ok", score.error
    message = user_message(backend.requests[0])
    assert len(image_hashes(message)) == 2  # the side-by-side reference is shown whole
    text = message.text_content()
    assert '"the first image" is the left half of Image 1, "the second image" is Image 2' in text
    assert '"the first image" is the right half of Image 1, "the second image" is Image 2' in text


def test_records_feed_the_meta_evaluation():
    backend = ScriptedBackend(sc_pq([8, 6], [9, 4]) + [reply({"score": [1]})] * 3)
    ev = evaluator(backend, "viescore")
    ok = ev.evaluate(make_sample(id="u1", model="gen-a")).to_record()
    failed = ev.evaluate(make_sample(id="u2", model="gen-a")).to_record()
    assert ok["dimensions"].keys() == {"SC", "PQ", "O"}
    assert failed["status"] == "error" and failed["score"] is None
    frame = records_to_frame([ok, failed])
    row = frame.loc[("text_guided_ie", "gen-a", "u1")]
    assert row["SC"] == pytest.approx(0.6) and row["PQ"] == pytest.approx(0.4)
    assert row["O"] == pytest.approx(math.sqrt(0.24))
    assert bool(frame.loc[("text_guided_ie", "gen-a", "u2")]["failed"])


def test_parse_score_list_accepts_scores_key_and_fractions():
    parsed = parse_score_list('{"scores": ["8/10", 7.5], "reasoning": "fine"}', 2)
    assert parsed.scores == (8.0, 7.5) and parsed.reasoning == "fine"
