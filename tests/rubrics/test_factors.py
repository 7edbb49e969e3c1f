"""The built-in factor rubrics: prompts, strict validation, re-asks, errors, records."""

from __future__ import annotations

from typing import Any

import pytest

from cigeval import EnsembleConfig, Evaluator, RunConfig
from cigeval.backends.scripted import ScriptedBackend
from cigeval.errors import InputError
from cigeval.meta.scores import records_to_frame
from cigeval.rubrics import get_rubric
from cigeval.rubrics.factors import EDIT_QUALITY, IMAGE_PRESERVATION, INSTRUCTION_FIDELITY

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

EQ_KEYS = [
    "scale_realism",
    "spatial_relationship",
    "texture_and_detail",
    "image_quality",
    "color_and_lighting",
    "seamlessness",
]
IF_KEYS = ["alignment", "completeness", "plausibility"]
IP_KEYS = ["unchanged_regions", "global_consistency", "identity_preservation"]
GOOD = "The added beach sand matches the reference in grain and tone, with the fox sitting at a believable size near the frame centre."  # noqa: E501


def answer(
    keys: list[str],
    scores: list[int] | None = None,
    mode: str = "offline",
    image_id: Any = "s1",
    **overrides: Any,
) -> dict[str, Any]:
    """A valid reply for ``keys``; ``overrides`` replace single factor entries."""
    scores = scores or [5] * len(keys)
    results = {k: {"score": s, "justification": GOOD} for k, s in zip(keys, scores, strict=True)}
    results.update(overrides)
    return {"image_id": image_id, f"{mode}_factor_results": results}


def offline_sample(**fields: Any):
    images = {
        "source": image(COLOURS["source"]),
        "ground_truth": image(COLOURS["ground_truth"]),
        "output": image(COLOURS["output"]),
    }
    return make_sample(images=images, **fields)


def online_sample():
    return make_sample(
        images={"source": image(COLOURS["source"]), "output": image(COLOURS["output"])}
    )


def test_seed_factor_keys_are_exact():
    assert [f.key for f in EDIT_QUALITY.factors] == EQ_KEYS
    assert [f.key for f in INSTRUCTION_FIDELITY.factors] == IF_KEYS
    assert [f.key for f in IMAGE_PRESERVATION.factors] == IP_KEYS
    assert all(r.scale == (1, 7) for r in (EDIT_QUALITY, INSTRUCTION_FIDELITY, IMAGE_PRESERVATION))
    assert {"edit_quality", "instruction_fidelity", "image_preservation"} <= {
        get_rubric(n).name for n in ("edit_quality", "instruction_fidelity", "image_preservation")
    }


async def test_offline_edit_quality_prompt_images_and_value():
    backend = ScriptedBackend([reply(answer(EQ_KEYS, [7, 6, 5, 4, 3, 2]))])
    sample = offline_sample()
    run = make_run(sample, backend)
    score = await EDIT_QUALITY.evaluate(run)

    assert score.status == "ok"
    assert score.value == pytest.approx((4.5 - 1) / 6)
    assert [s.question_id for s in score.sub_scores] == EQ_KEYS
    assert [s.score for s in score.sub_scores] == [7, 6, 5, 4, 3, 2]
    assert score.details["mode"] == "offline"
    assert score.details["scale"] == [1, 7]
    assert score.details["image_id"] == "s1"
    assert score.details["offline_factor_results"]["seamlessness"] == {
        "score": 2,
        "justification": GOOD,
    }

    (request,) = backend.requests
    message = user_message(request)
    # ground truth first, then the edited image; never the source in offline mode
    assert image_hashes(message) == [
        sha(image(COLOURS["ground_truth"])),
        sha(image(COLOURS["output"])),
    ]
    text = all_text(request)
    for key in EQ_KEYS:
        assert f'"{key}"' in text
    assert '"offline_factor_results"' in text
    assert "online_factor_results" not in text
    assert "Replace the snowy ground with a sandy beach." in text
    assert "15 to 30 words" in text
    assert "ground truth" in text.lower()


async def test_auto_mode_goes_online_without_ground_truth():
    backend = ScriptedBackend([reply(answer(IF_KEYS, [7, 7, 7], mode="online"))])
    score = await INSTRUCTION_FIDELITY.evaluate(make_run(online_sample(), backend))
    assert score.status == "ok" and score.value == 1.0
    assert score.details["mode"] == "online"
    assert "online_factor_results" in score.details
    message = user_message(backend.requests[0])
    assert image_hashes(message) == [sha(image(COLOURS["source"])), sha(image(COLOURS["output"]))]
    assert '"online_factor_results"' in message.text_content()


async def test_mode_option_overrides_auto():
    backend = ScriptedBackend([reply(answer(IP_KEYS, [1, 1, 1], mode="online"))])
    run = make_run(offline_sample(), backend, rubric_options={"mode": "online"})
    score = await IMAGE_PRESERVATION.evaluate(run)
    assert score.value == 0.0 and score.details["mode"] == "online"
    assert image_hashes(user_message(backend.requests[0]))[0] == sha(image(COLOURS["source"]))


async def test_offline_mode_without_ground_truth_is_an_input_error():
    run = make_run(online_sample(), ScriptedBackend([]), rubric_options={"mode": "offline"})
    with pytest.raises(InputError, match="ground_truth"):
        await EDIT_QUALITY.evaluate(run)


def test_validate_needs_output_instruction_and_a_reference():
    sample = make_sample(images={"output": image(COLOURS["output"])}, instruction=None)
    with pytest.raises(InputError) as info:
        EDIT_QUALITY.validate(sample)
    assert "instruction" in str(info.value) and "ground_truth" in str(info.value)
    EDIT_QUALITY.validate(offline_sample())
    EDIT_QUALITY.validate(online_sample())


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (answer(IF_KEYS[:2]), "missing the key(s) 'plausibility'"),
        (answer(IF_KEYS, [5, 8, 5]), "completeness.score is 8, outside the allowed range 1-7"),
        (
            answer(IF_KEYS, plausibility={"score": 4, "justification": "looks fine overall"}),
            "plausibility.justification has 3 words; it must have 15 to 30",
        ),
        (
            answer(IF_KEYS, alignment={"score": 5.5, "justification": GOOD}),
            "alignment.score must be an integer from 1 to 7",
        ),
        (
            answer(IF_KEYS, realism={"score": 5, "justification": GOOD}),
            "unexpected key(s) 'realism'",
        ),
        (answer(IF_KEYS, mode="online"), "missing the key(s) 'offline_factor_results'"),
        (
            answer(IF_KEYS, alignment={"score": 5}),
            "alignment is missing the key(s) 'justification'",
        ),
    ],
)
async def test_malformed_reply_is_reasked_with_the_precise_error(bad, expected):
    backend = ScriptedBackend([reply(bad), reply(answer(IF_KEYS, [4, 4, 4]))])
    score = await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(), backend))

    assert score.status == "ok" and score.value == pytest.approx(0.5)
    assert len(backend.requests) == 2
    second = backend.requests[1]
    assert second.messages[-2].role == "assistant"
    assert second.messages[-2].text_content() == reply(bad)
    assert expected in second.messages[-1].text_content()
    # the re-ask still carries the images of the first request
    assert len(image_hashes(user_message(second, 0))) == 2


async def test_all_problems_are_named_at_once():
    bad = answer(IF_KEYS[:2], [9, 5])
    backend = ScriptedBackend([reply(bad), reply(answer(IF_KEYS))])
    await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(), backend))
    error = backend.requests[1].messages[-1].text_content()
    assert "plausibility" in error and "alignment.score is 9" in error


async def test_prose_around_the_json_is_accepted():
    text = reply(answer(IF_KEYS, [6, 5, 4]), prose="Here is my assessment of the edit:")
    backend = ScriptedBackend([text])
    score = await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(), backend))
    assert score.status == "ok" and len(backend.requests) == 1
    assert [s.score for s in score.sub_scores] == [6, 5, 4]


async def test_retries_exhausted_give_an_error_record_without_numbers():
    bad = reply(answer(IF_KEYS, [8, 8, 8]))
    backend = ScriptedBackend([bad] * 3)
    score = await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(), backend))
    assert len(backend.requests) == 3  # the first ask + max_parse_retries (2)
    assert score.status == "error"
    assert score.error is not None and score.error.startswith("ParseError: ")
    assert "outside the allowed range 1-7" in score.error
    assert score.value is None and score.sub_scores == [] and score.dimensions == {}
    assert "offline_factor_results" not in score.details


def test_end_to_end_through_the_evaluator_and_meta_records():
    backend = ScriptedBackend(
        [
            reply(answer(EQ_KEYS, [6] * 6, image_id="a")),
            *[reply(answer(EQ_KEYS[:5], image_id="b"))] * 3,
        ]
    )
    ev = evaluator(backend, "edit_quality")
    good = ev.evaluate(offline_sample(id="a", model="gen-x"))
    bad = ev.evaluate(offline_sample(id="b", model="gen-x"))
    assert good.status == "ok" and good.value == pytest.approx(5 / 6)
    assert bad.status == "error" and "ParseError" in (bad.error or "")
    records = [good.to_record(), bad.to_record()]
    assert records[0]["details"]["offline_factor_results"]["image_quality"]["score"] == 6
    assert records[1]["score"] is None
    frame = records_to_frame(records)
    assert len(frame) == 2


def test_evaluator_turns_a_missing_image_into_an_error_record():
    ev = evaluator(ScriptedBackend([]), "instruction_fidelity")
    score = ev.evaluate(make_sample(images={"output": image(COLOURS["output"])}))
    assert score.status == "error" and "ground_truth" in (score.error or "")


def test_ensembles_of_factor_judges_combine_final_scores():
    keys = ["alignment", "completeness", "plausibility"]
    high = ScriptedBackend([reply(answer(keys, [7, 7, 7]))], name="high")
    low = ScriptedBackend([reply(answer(keys, [1, 1, 1]))], name="low")
    ev = Evaluator(
        [high, low],
        rubric="instruction_fidelity",
        run_config=RunConfig(use_cache=False),
        ensemble=EnsembleConfig(combine="mean", level="sub_question"),
    )
    score = ev.evaluate(offline_sample())
    # (7-1)/6 = 1.0 and (1-1)/6 = 0.0: the mean of the final scores, not min(sub-scores)/10
    assert score.value == 0.5
    assert score.details["level"] == "final"
    assert all(s.scale == (1, 7) for s in score.sub_scores)


@pytest.mark.parametrize("written", ["<image_identifier>", "image_7", 42, None])
async def test_any_image_id_is_accepted_and_recorded(written):
    data = answer(IF_KEYS, [6, 5, 4], image_id=written)
    if written is None:
        del data["image_id"]
    backend = ScriptedBackend([reply(data)])
    score = await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(), backend))

    assert len(backend.requests) == 1  # accepted at once, never re-asked
    assert score.status == "ok" and [s.score for s in score.sub_scores] == [6, 5, 4]
    assert score.details["image_id"] == written
    (warning,) = score.details["warnings"]
    assert "instead of the sample id 's1'" in warning
    assert (repr(written) if written is not None else "no image_id") in warning


async def test_matching_image_id_leaves_no_warning():
    backend = ScriptedBackend([reply(answer(IF_KEYS, image_id=" s1 "))])
    score = await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(), backend))
    assert score.details["image_id"] == "s1" and "warnings" not in score.details
    # a numeric sample id echoed as a JSON number is the same id
    backend = ScriptedBackend([reply(answer(IF_KEYS, image_id=7))])
    score = await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(id="7"), backend))
    assert score.details["image_id"] == 7 and "warnings" not in score.details


async def test_a_wrong_image_id_does_not_hide_real_problems():
    bad = answer(IF_KEYS, [9, 5, 5], image_id="<image_identifier>")
    backend = ScriptedBackend([reply(bad), reply(answer(IF_KEYS))])
    await INSTRUCTION_FIDELITY.evaluate(make_run(offline_sample(), backend))
    error = backend.requests[1].messages[-1].text_content()
    assert "alignment.score is 9" in error and "image_id" not in error
