"""User-defined factor rubrics: scales, templates, result keys, aggregates, registration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cigeval.backends.scripted import ScriptedBackend
from cigeval.errors import ConfigError, InputError
from cigeval.rubrics import Factor, FactorRubric, define_rubric, get_rubric

from .support import COLOURS, all_text, evaluator, image, make_run, make_sample, reply

WORDS = "The lettering on the sign is sharp, complete and spelled exactly as the instruction asks, with even spacing."  # noqa: E501
ROOT = Path(__file__).resolve().parents[2]


def online_reply(scores: dict[str, int], key: str = "online_factor_results") -> str:
    return reply(
        {
            "image_id": "s1",
            key: {k: {"score": v, "justification": WORDS} for k, v in scores.items()},
        }
    )


def test_define_rubric_registers_and_runs_end_to_end():
    define_rubric(
        "t_legible",
        factors={
            "legibility": "Whether added text reads at a glance.",
            "placement": "Whether added text sits where asked.",
        },
        scale=(1, 5),
        replace=True,
    )
    assert isinstance(get_rubric("t_legible"), FactorRubric)
    backend = ScriptedBackend(
        [
            online_reply({"legibility": 6, "placement": 2}),
            online_reply({"legibility": 5, "placement": 2}),
        ]
    )
    score = evaluator(backend, "t_legible").evaluate(make_sample())

    assert score.status == "ok" and score.rubric == "t_legible"
    assert score.value == pytest.approx((3.5 - 1) / 4)
    assert score.details["value_mapping"] == "(mean - 1) / 4"
    first = all_text(backend.requests[0])
    assert '"legibility"' in first and '"placement"' in first and "from 1 to 5" in first
    assert "legibility.score is 6, outside the allowed range 1-5" in all_text(backend.requests[1])


def test_registering_a_taken_name_needs_replace():
    define_rubric("t_taken", factors={"a": "A thing."}, replace=True)
    with pytest.raises(ConfigError, match="already registered"):
        define_rubric("t_taken", factors={"a": "A thing."})


async def test_custom_template_result_key_and_no_word_limit():
    rubric = define_rubric(
        "t_template",
        factors=[Factor("sharpness", "Whether the edit is crisp.")],
        template="Judge {{ factors|length }} factor for: {{ instruction }} ({{ mode }}).",
        result_key="ratings",
        justification_words=None,
        register=False,
    )
    backend = ScriptedBackend(
        [
            reply(
                {"image_id": "s1", "ratings": {"sharpness": {"score": 7, "justification": "crisp"}}}
            )
        ]
    )
    score = await rubric.evaluate(make_run(make_sample(), backend))
    assert score.status == "ok" and score.value == 1.0
    text = all_text(backend.requests[0])
    assert "Judge 1 factor for: Replace the snowy ground with a sandy beach. (online)." in text
    assert '"ratings"' in text and "ANSWER FORMAT" in text  # the format is always appended


async def test_template_with_an_unknown_variable_fails_loudly():
    rubric = define_rubric(
        "t_bad", factors={"a": "A thing."}, template="{{ nonsense }}", register=False
    )
    with pytest.raises(Exception, match="nonsense"):
        await rubric.evaluate(make_run(make_sample(), ScriptedBackend([])))


async def test_template_from_a_file(tmp_path):
    path = tmp_path / "rubric.j2"
    path.write_text("FILE TEMPLATE {{ rubric }}", encoding="utf-8")
    rubric = define_rubric("t_file", factors={"a": "A thing."}, template=path, register=False)
    backend = ScriptedBackend([online_reply({"a": 4})])
    await rubric.evaluate(make_run(make_sample(), backend))
    assert "FILE TEMPLATE t_file" in all_text(backend.requests[0])


@pytest.mark.parametrize(
    ("aggregate", "expected"),
    [
        ("min", 0.0),
        ("max", 1.0),
        ("median", 0.5),
        ({"a": 3.0, "b": 1.0}, 0.25),
        (lambda s: 0.42, 0.42),
    ],
)
async def test_aggregates(aggregate, expected):
    rubric = define_rubric(
        "t_agg", factors={"a": "A.", "b": "B."}, aggregate=aggregate, register=False
    )
    backend = ScriptedBackend([online_reply({"a": 1, "b": 7})])
    score = await rubric.evaluate(make_run(make_sample(), backend))
    assert score.value == pytest.approx(expected)


async def test_aggregate_function_out_of_range_is_a_config_error():
    rubric = define_rubric("t_agg2", factors={"a": "A."}, aggregate=lambda s: 5.0, register=False)
    with pytest.raises(ConfigError, match="not in"):
        await rubric.evaluate(make_run(make_sample(), ScriptedBackend([online_reply({"a": 3})])))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"factors": {}}, "one or more factors"),
        ({"factors": {"a": "A."}, "scale": (5, 1)}, "low < high"),
        ({"factors": {"a": "A."}, "mode": "sideways"}, "auto, offline or online"),
        ({"factors": {"a": "A.", "b": "B."}, "aggregate": {"a": 1.0}}, "weights"),
        ({"factors": {"a": "A."}, "scale": (1, 3), "anchors": {"online": ["x", "y"]}}, "3 labels"),
        ({"factors": {"Bad Key": "A."}}, "identifier"),
        ({"factors": {"a": Factor("b", "B.")}}, "differ"),
    ],
)
def test_bad_definitions_are_config_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        define_rubric("t_invalid", register=False, **kwargs)


async def test_custom_anchors_are_shown():
    rubric = define_rubric(
        "t_anchor",
        factors={"a": "A."},
        scale=(0, 2),
        register=False,
        anchors={"online": ["bad", "so-so", "good"]},
    )
    backend = ScriptedBackend([online_reply({"a": 2})])
    score = await rubric.evaluate(make_run(make_sample(), backend))
    assert score.value == 1.0
    assert "0 = bad" in all_text(backend.requests[0]) and "2 = good" in all_text(
        backend.requests[0]
    )


def test_fixed_offline_mode_validates_the_ground_truth():
    rubric = define_rubric("t_off", factors={"a": "A."}, mode="offline", register=False)
    with pytest.raises(InputError, match="ground_truth"):
        rubric.validate(make_sample())
    rubric.validate(
        make_sample(
            images={
                "ground_truth": image(COLOURS["ground_truth"]),
                "output": image(COLOURS["output"]),
            }
        )
    )


def test_the_example_script_runs():
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "custom_rubric.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "status: ok" in done.stdout
    assert "missing the key(s) 'placement'" in done.stdout
