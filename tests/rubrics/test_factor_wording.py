"""What the judge reads: offline factor prompts are stated against the ground truth (as the
reference-based specifications word them), online ones never mention a ground truth.

These tests read the request the judge receives, factor by factor, so a wording that slips
back to an absolute criterion in offline mode fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from cigeval.backends.scripted import ScriptedBackend
from cigeval.rubrics import Factor, FactorRubric, FactorText, define_rubric
from cigeval.rubrics.factors import EDIT_QUALITY, IMAGE_PRESERVATION, INSTRUCTION_FIDELITY
from cigeval.testing import request_text

from .support import COLOURS, factor_blocks, image, make_run, make_sample, reply

GT = "ground truth"
BUILT_IN = [EDIT_QUALITY, INSTRUCTION_FIDELITY, IMAGE_PRESERVATION]
WORDS = "Image 2 places the sand at the same horizon line as the ground truth, though its grain is coarser near the fox's paws."  # noqa: E501

#: The constraints of the two specifications, as cigeval words them (offline prompts only).
COMPARATIVE_RULE = "Assess by comparison: on every factor, Image 2 is better than, worse than or similar to the ground truth"  # noqa: E501
FIDELITY_RULES = [
    "For alignment: compare how accurately the two images interpret and carry out the instruction.",
    "For completeness: compare how thoroughly the two images carry out the instruction.",
    "For plausibility: compare how possible the two results would be in the real world.",
    "Stay objective: judge only what is visible and what the instruction asked for.",
    "Be precise: say what differs between Image 2 and the ground truth.",
]
QUALITY_RULES = [
    "Be precise: say where in the images each difference is.",
    "Stay objective: judge only what is visible, not the editing method or its intent.",
]


def _sample(mode: str):
    images = {"source": image(COLOURS["source"]), "output": image(COLOURS["output"])}
    if mode == "offline":
        images["ground_truth"] = image(COLOURS["ground_truth"])
    return make_sample(images=images)


def _valid(rubric: FactorRubric, mode: str) -> str:
    results = {f.key: {"score": 5, "justification": WORDS} for f in rubric.factors}
    return reply({"image_id": "s1", f"{mode}_factor_results": results})


async def _request_text(rubric: FactorRubric, mode: str) -> str:
    backend = ScriptedBackend([_valid(rubric, mode)])
    score = await rubric.evaluate(make_run(_sample(mode), backend))
    assert score.status == "ok" and score.details["mode"] == mode
    (request,) = backend.requests
    return request_text(request)


def _factor_blocks(text: str, rubric: FactorRubric) -> dict[str, dict[str, Any]]:
    blocks = factor_blocks(text)
    assert list(blocks) == [f.key for f in rubric.factors]
    return blocks


@pytest.mark.parametrize("rubric", BUILT_IN, ids=lambda r: r.name)
async def test_offline_prompt_states_every_factor_against_the_ground_truth(rubric):
    text = await _request_text(rubric, "offline")
    blocks = _factor_blocks(text, rubric)
    for key, block in blocks.items():
        assert GT in block["definition"], key
        assert len(block["high"]) >= 1 and len(block["low"]) >= 1, key
        for bullet in block["high"] + block["low"]:
            assert GT in bullet, (key, bullet)
        assert any(GT in check for check in block["checks"]), key
    # the task, the steps, the Likert labels and the rules compare with the ground truth too
    assert "Image 1 is the ground truth, the reference edit" in text
    assert "Look at how the ground truth (Image 1) handles each factor" in text
    assert "7 = strongly agree: equals or surpasses the ground truth" in text
    assert "4 = neither: about as good as the ground truth, with mixed results" in text
    assert COMPARATIVE_RULE in text


@pytest.mark.parametrize("rubric", BUILT_IN, ids=lambda r: r.name)
async def test_online_prompt_is_reference_free(rubric):
    text = await _request_text(rubric, "online")
    lowered = text.lower()
    assert "ground truth" not in lowered and "ground-truth" not in lowered
    assert "Image 1 is the source image before editing" in text
    blocks = _factor_blocks(text, rubric)
    for factor in rubric.factors:
        assert blocks[factor.key]["definition"] == factor.definition
        assert blocks[factor.key]["high"] == list(factor.high)
    assert COMPARATIVE_RULE not in text
    assert not any(rule in text for rule in FIDELITY_RULES + QUALITY_RULES)


async def test_offline_prompts_carry_the_specification_constraints():
    fidelity = await _request_text(INSTRUCTION_FIDELITY, "offline")
    quality = await _request_text(EDIT_QUALITY, "offline")
    preservation = await _request_text(IMAGE_PRESERVATION, "offline")
    for rule in FIDELITY_RULES:
        assert f"- {rule}" in fidelity
        assert rule not in quality
    for rule in QUALITY_RULES:
        assert f"- {rule}" in quality
    assert "the car blue where the ground truth made it red" in fidelity
    assert "larger for its surroundings than the ground truth's" in quality
    # image_preservation is cigeval's own: only the rules every offline prompt has
    assert COMPARATIVE_RULE in preservation
    assert not any(rule in preservation for rule in FIDELITY_RULES + QUALITY_RULES)


@pytest.mark.parametrize("rubric", BUILT_IN, ids=lambda r: r.name)
@pytest.mark.parametrize("mode", ["offline", "online"])
async def test_keys_scale_and_length_are_the_specifications(rubric, mode):
    text = await _request_text(rubric, mode)
    skeleton = text.split("ANSWER FORMAT", 1)[1]
    assert '"image_id": "s1"' in skeleton
    assert f'"{mode}_factor_results"' in skeleton
    for factor in rubric.factors:
        assert f'"{factor.key}"' in skeleton
    assert "one whole number from 1 to 7" in text
    assert "justification of 15 to 30 words" in text
    assert rubric.scale == (1, 7)


async def test_sub_score_questions_use_the_wording_of_the_mode():
    for mode in ("offline", "online"):
        backend = ScriptedBackend([_valid(INSTRUCTION_FIDELITY, mode)])
        score = await INSTRUCTION_FIDELITY.evaluate(make_run(_sample(mode), backend))
        questions = [s.question for s in score.sub_scores]
        assert all((GT in q) == (mode == "offline") for q in questions), questions


def test_every_built_in_factor_has_a_distinct_offline_wording():
    for rubric in BUILT_IN:
        for factor in rubric.factors:
            assert isinstance(factor.offline, FactorText), factor.key
            assert factor.offline.definition != factor.definition
            assert factor.in_mode("online").definition == factor.definition
            assert factor.in_mode("offline").definition == factor.offline.definition


async def test_user_factor_with_one_definition_reads_the_same_in_both_modes():
    rubric = define_rubric(
        "t_one_text",
        factors={"legibility": {"definition": "Whether added text reads.", "high": ["crisp"]}},
        register=False,
    )
    for mode in ("offline", "online"):
        blocks = _factor_blocks(await _request_text(rubric, mode), rubric)
        assert blocks["legibility"]["definition"] == "Whether added text reads."
        assert blocks["legibility"]["high"] == ["crisp"]


async def test_user_factor_with_mode_texts_and_constraints():
    rubric = define_rubric(
        "t_two_texts",
        factors={
            "legibility": {
                "definition": "Whether added text reads at a glance.",
                "offline": {
                    "definition": "Whether added text reads as easily as in the ground truth.",
                    "high": ["as legible as the ground truth's text"],
                    "low": ["harder to read than the ground truth's text"],
                },
            }
        },
        constraints={"offline": ["Compare letter by letter."]},
        register=False,
    )
    offline = await _request_text(rubric, "offline")
    online = await _request_text(rubric, "online")
    block = _factor_blocks(offline, rubric)["legibility"]
    assert block == {
        "definition": "Whether added text reads as easily as in the ground truth.",
        "checks": [],
        "high": ["as legible as the ground truth's text"],
        "low": ["harder to read than the ground truth's text"],
    }
    assert "- Compare letter by letter." in offline
    assert _factor_blocks(online, rubric)["legibility"]["definition"] == (
        "Whether added text reads at a glance."
    )
    assert "Compare letter by letter." not in online


def test_mode_texts_must_be_factor_texts_and_constraints_per_mode():
    from cigeval.errors import ConfigError

    with pytest.raises(ConfigError, match="offline must be a FactorText"):
        Factor("a", "A thing.", offline="as in the ground truth")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="per mode"):
        FactorRubric("t_bad", [Factor("a", "A thing.")], constraints={"reference": ["x"]})
    with pytest.raises(ConfigError, match="unexpected keyword"):
        define_rubric("t_bad2", factors={"a": {"definition": "A.", "offline": {"defn": "x"}}})
