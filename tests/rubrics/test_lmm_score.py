"""LMM Score: the multi-turn protocol for 1 to 12 edited images, S_all, ranks, ties, errors."""

from __future__ import annotations

from typing import Any

import pytest

from cigeval.backends.scripted import ScriptedBackend
from cigeval.errors import InputError
from cigeval.messages import ModelRequest
from cigeval.rubrics.lmm_results import competition_ranks, parse_lmm_scores
from cigeval.rubrics.lmm_score import LmmScoreRubric, batches

from .support import (
    COLOURS,
    evaluator,
    image,
    image_hashes,
    make_run,
    make_sample,
    output_image,
    reply,
    sha,
)

RUBRIC = LmmScoreRubric()


def lmm_sample(count: int, **fields: Any):
    images = {
        "source": image(COLOURS["source"]),
        "outputs": [output_image(i) for i in range(1, count + 1)],
    }
    fields.setdefault("task_indicator", "Background Change")
    return make_sample(images=images, **fields)


def scores_for(count: int, rows: list[tuple[int, int, int, int]] | None = None) -> dict:
    rows = rows or [
        (1 + i % 10, 10 - i % 10, 1 + (i * 3) % 10, 1 + (i * 7) % 10) for i in range(count)
    ]
    return {
        f"image_{i}": {"S_acc": a, "S_pre": p, "S_qua": q, "S_real": r, "reason": "ok"}
        for i, (a, p, q, r) in enumerate(rows, start=1)
    }


class Judge:
    """A reply function that answers prose to the protocol turns and JSON to the final ask."""

    def __init__(self, final: list[str]) -> None:
        self.final = list(final)

    def __call__(self, request: ModelRequest) -> str:
        last = request.messages[-1].text_content()
        if "Reply with one JSON object" in last or "could not be used" in last:
            return self.final.pop(0)
        return f"analysis #{len(request.messages)}"


def run_protocol(count: int, final: list[str], **config: Any):
    backend = ScriptedBackend(Judge(final))
    return backend, make_run(lmm_sample(count), backend, **config)


@pytest.mark.parametrize(("count", "turns", "per_turn"), [(1, 1, 1), (3, 3, 1), (12, 6, 2)])
async def test_protocol_shape_for_1_3_and_12_images(count, turns, per_turn):
    backend, run = run_protocol(count, [reply(scores_for(count))])
    score = await RUBRIC.evaluate(run)
    assert score.status == "ok", score.error
    # describe + factors + analysis turns + final scoring
    assert len(backend.requests) == 2 + turns + 1
    assert score.details["images_per_turn"] == per_turn

    first = backend.requests[0]
    assert first.messages[0].role == "system"
    assert image_hashes(first.messages[1]) == [sha(image(COLOURS["source"]))]
    step1 = first.messages[1].text_content()
    assert "Task indicator: Background Change" in step1
    assert "Editing instruction: Replace the snowy ground" in step1

    step2 = backend.requests[1].messages[-1].text_content()
    for factor in (
        "Editing accuracy",
        "Contextual preservation",
        "Visual quality",
        "Logical realism",
        "S_acc",
        "S_pre",
        "S_qua",
        "S_real",
        "1 to 10",
    ):
        assert factor in step2

    # the edited images arrive in order, per_turn at a time, after the first two turns
    shown: list[str] = []
    for request in backend.requests[2 : 2 + turns]:
        hashes = image_hashes(request.messages[-1])
        assert 1 <= len(hashes) <= per_turn
        shown += hashes
    assert shown == [sha(output_image(i)) for i in range(1, count + 1)]

    final = backend.requests[-1]
    # the whole conversation is sent back: replies as assistant turns, every image once
    assert [m.role for m in final.messages].count("assistant") == 2 + turns
    assert sum(len(image_hashes(m)) for m in final.messages) == count + 1
    final_text = final.messages[-1].text_content()
    assert f'"image_{count}"' in final_text and f'"image_{count + 1}"' not in final_text
    if count > 1:
        assert "avoid giving the same score" in final_text

    images = score.details["images"]
    assert [e["image"] for e in images] == [f"image_{i}" for i in range(1, count + 1)]
    assert sorted(e["rank"] for e in images)[0] == 1
    assert len(score.sub_scores) == count


async def test_s_all_is_computed_not_trusted_and_ranked():
    rows = [(6, 7, 5, 6), (6, 8, 7, 6), (8, 9, 9, 8)]
    final = scores_for(3, rows)
    final["image_1"]["S_all"] = 9.9  # a model-supplied total is ignored
    _backend, run = run_protocol(3, [reply(final)])
    score = await RUBRIC.evaluate(run)
    images = score.details["images"]
    assert [e["S_all"] for e in images] == pytest.approx([6.1, 6.8, 8.5])  # the seed's example
    assert [e["rank"] for e in images] == [3, 2, 1]
    assert images[0]["S_acc"] == 6 and images[2]["S_real"] == 8
    assert score.value == pytest.approx((6.1 + 6.8 + 8.5) / 3 / 10)
    assert score.details["weights"] == {"S_acc": 0.4, "S_pre": 0.3, "S_qua": 0.2, "S_real": 0.1}
    assert [s.score for s in score.sub_scores] == pytest.approx([6.1, 6.8, 8.5])


async def test_ties_share_a_rank_and_are_warned_about():
    rows = [(7, 7, 7, 7), (9, 9, 9, 9), (7, 7, 7, 7), (5, 5, 5, 5)]
    _backend, run = run_protocol(4, [reply(scores_for(4, rows))])
    score = await RUBRIC.evaluate(run)
    assert [e["rank"] for e in score.details["images"]] == [2, 1, 2, 4]
    warnings = score.details["warnings"]
    assert "tie on S_all = 7: image_1, image_3" in warnings
    assert "tie on S_acc = 7: image_1, image_3" in warnings
    assert score.status == "ok"


async def test_first_image_value_option_and_labels():
    backend = ScriptedBackend(Judge([reply(scores_for(2, [(10, 10, 10, 10), (1, 1, 1, 1)]))]))
    sample = lmm_sample(2, metadata={"methods": ["SINE", "AIDI"]})
    run = make_run(sample, backend, rubric_options={"value": "first"})
    score = await RUBRIC.evaluate(run)
    assert score.value == pytest.approx(1.0)
    assert [e["label"] for e in score.details["images"]] == ["SINE", "AIDI"]
    assert "(SINE)" in score.sub_scores[0].question
    # method names are never shown to the judge
    assert all("SINE" not in m.text_content() for r in backend.requests for m in r.messages)


async def test_images_per_turn_option():
    backend, run = run_protocol(5, [reply(scores_for(5))], rubric_options={"images_per_turn": 5})
    await RUBRIC.evaluate(run)
    assert len(backend.requests) == 4
    assert len(image_hashes(backend.requests[2].messages[-1])) == 5


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.pop("image_3"), "missing image key(s) image_3"),
        (lambda d: d["image_2"].update(S_qua=11), "image_2.S_qua: score 11 is outside"),
        (lambda d: d["image_1"].update(S_pre=7.5), "image_1.S_pre: score 7.5 must be an integer"),
        (lambda d: d["image_1"].pop("S_real"), "image_1 is missing S_real"),
        (lambda d: d.update(image_4=d["image_1"]), "unexpected key(s) 'image_4'"),
    ],
)
async def test_malformed_scores_are_reasked(mutate, expected):
    bad = scores_for(3)
    mutate(bad)
    backend, run = run_protocol(3, [reply(bad, prose="Here are the scores:"), reply(scores_for(3))])
    score = await RUBRIC.evaluate(run)
    assert score.status == "ok"
    reask = backend.requests[-1].messages[-1].text_content()
    assert expected in reask
    assert backend.requests[-1].messages[-2].role == "assistant"


async def test_retries_exhausted_give_an_error_without_numbers():
    bad = reply({"image_1": {"S_acc": 0, "S_pre": 5, "S_qua": 5, "S_real": 5}})
    backend, run = run_protocol(1, [bad, bad, bad])
    score = await RUBRIC.evaluate(run)
    assert len(backend.requests) == 2 + 1 + 3
    assert score.status == "error"
    assert (score.error or "").startswith("ParseError: rubric:lmm_score:score")
    assert "outside the allowed range 1-10" in (score.error or "")
    assert score.value is None and score.sub_scores == [] and "images" not in score.details


def test_validate_requires_source_outputs_instruction_and_matching_labels():
    with pytest.raises(InputError, match="source"):
        RUBRIC.validate(make_sample(images={"outputs": [output_image(1)]}))
    with pytest.raises(InputError, match="instruction"):
        RUBRIC.validate(lmm_sample(2, instruction=""))
    with pytest.raises(InputError, match="one label per edited image"):
        RUBRIC.validate(lmm_sample(2, metadata={"labels": ["only-one"]}))
    RUBRIC.validate(make_sample())  # a single images.output counts as one edited image


def test_end_to_end_with_twelve_images():
    backend = ScriptedBackend(Judge([reply(scores_for(12))]))
    score = evaluator(backend, "lmm_score").evaluate(lmm_sample(12, model="several"))
    assert score.status == "ok", score.error
    record = score.to_record()
    assert len(record["details"]["images"]) == 12
    assert 0 < record["score"] <= 1
    assert record["usage"]["calls"] == 2 + 6 + 1


def test_helpers():
    assert competition_ranks([5.0, 9.0, 5.0, 1.0]) == [2, 1, 2, 4]
    assert [list(b) for b in batches(5, 2)] == [[1, 2], [3, 4], [5]]
    wrapped = '{"scores": {"image_1": {"S_acc": 1, "S_pre": 2, "S_qua": 3, "S_real": 4}}}'
    (only,) = parse_lmm_scores(wrapped, 1)
    assert only.s_all == pytest.approx(0.4 + 0.6 + 0.6 + 0.4)
