"""The rubrics through ``cigeval evaluate --rubric NAME`` against an OpenAI-compatible server,
with records the meta-evaluation reads; and prompt variants (``prompt_dir``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cigeval.backends.scripted import ScriptedBackend
from cigeval.meta.scores import load_cigeval_results
from cigeval.results.jsonl import read_records
from cigeval.rubrics.viescore import ViescoreRubric
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.cli_support import evaluate_cli

from .support import (
    COLOURS,
    all_text,
    factor_blocks,
    image,
    make_run,
    make_sample,
    output_image,
    reply,
)

WORDS = "The sand texture and the fox outline match the source closely, with only a faint halo along the left ear edge."  # noqa: E501


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    for role, colour in COLOURS.items():
        image(colour).save(tmp_path / f"{role}.png")
    for i in range(1, 4):
        output_image(i).save(tmp_path / f"out{i}.png")
    return tmp_path


def write_samples(path: Path, samples: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    return path


def last_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text")


def evaluate(server: FakeOpenAIServer, samples: Path, out: Path, *extra: str) -> int:
    return evaluate_cli(server, samples, out, "--no-cache", *extra, model="openai:judge")


def test_viescore_through_the_cli(env):
    samples = write_samples(
        env / "s.jsonl",
        [
            {
                "id": f"u{i}",
                "task": "text_guided_ie",
                "model": "gen",
                "instruction": "add a hat",
                "images": {"source": "source.png", "output": "output.png"},
            }
            for i in range(3)
        ],
    )

    def judge(body: dict[str, Any]) -> str:
        text = last_text(body)
        if "naturalness" in text:
            return json.dumps({"score": [8, 6], "reasoning": "fine"})
        return json.dumps({"score": [9, 7], "reasoning": "fine"})

    out = env / "r.jsonl"
    with FakeOpenAIServer(judge) as server:
        assert evaluate(server, samples, out, "--rubric", "viescore") == 0
        assert len(server.requests) == 6
    records = list(read_records(out))
    assert {r["rubric"] for r in records} == {"viescore"}
    frame = load_cigeval_results(out)
    assert len(frame) == 3
    assert frame["SC"].tolist() == pytest.approx([0.7] * 3)
    assert frame["O"].tolist() == pytest.approx([math.sqrt(0.42)] * 3)


def test_factor_rubric_with_option_and_lmm_score_through_the_cli(env):
    samples = write_samples(
        env / "s.jsonl",
        [
            {
                "id": "e1",
                "task": "text_guided_ie",
                "model": "gen",
                "instruction": "add a hat",
                "images": {
                    "source": "source.png",
                    "ground_truth": "ground_truth.png",
                    "output": "output.png",
                },
            },
        ],
    )

    def factor_judge(body: dict[str, Any]) -> str:
        assert "online_factor_results" in last_text(body)
        results = {
            k: {"score": 6, "justification": WORDS}
            for k in ("alignment", "completeness", "plausibility")
        }
        return json.dumps({"image_id": "e1", "online_factor_results": results})

    out = env / "f.jsonl"
    with FakeOpenAIServer(factor_judge) as server:
        status = evaluate(
            server,
            samples,
            out,
            "--rubric",
            "instruction_fidelity",
            "--rubric-option",
            "mode=online",
        )
    assert status == 0
    (record,) = read_records(out)
    assert record["score"] == pytest.approx(5 / 6)
    assert record["details"]["mode"] == "online"
    assert len(load_cigeval_results(out)) == 1

    lmm = write_samples(
        env / "l.jsonl",
        [
            {
                "id": "m1",
                "task": "text_guided_ie",
                "model": "methods",
                "instruction": "beach",
                "task_indicator": "Background Change",
                "metadata": {"methods": ["a", "b", "c"]},
                "images": {"source": "source.png", "outputs": ["out1.png", "out2.png", "out3.png"]},
            },
        ],
    )

    def lmm_judge(body: dict[str, Any]) -> str:
        if "Reply with one JSON object" not in last_text(body):
            return "A careful description."
        return json.dumps(
            {f"image_{i}": {"S_acc": 9 - i, "S_pre": 8, "S_qua": 7, "S_real": 6} for i in (1, 2, 3)}
        )

    out = env / "l_out.jsonl"
    with FakeOpenAIServer(lmm_judge) as server:
        assert evaluate(server, lmm, out, "--rubric", "lmm_score") == 0
        assert len(server.requests) == 6
        assert len(server.requests[-1].image_urls()) == 4
    (record,) = read_records(out)
    assert [e["rank"] for e in record["details"]["images"]] == [1, 2, 3]
    assert [e["label"] for e in record["details"]["images"]] == ["a", "b", "c"]


async def test_prompt_variant_folder_replaces_a_rubric_template(tmp_path):
    (tmp_path / "rubric_viescore_pq.j2").write_text(
        'VARIANT PQ PROMPT: reply {"score": [n, a]}', encoding="utf-8"
    )
    backend = ScriptedBackend([reply({"score": [5, 5]}), reply({"score": [5, 5]})])
    run = make_run(make_sample(), backend, prompt_dir=str(tmp_path))
    score = await ViescoreRubric().evaluate(run)
    assert score.status == "ok"
    assert "VARIANT PQ PROMPT" in all_text(backend.requests[1])
    assert "VARIANT PQ PROMPT" not in all_text(backend.requests[0])


@pytest.mark.parametrize(
    ("rubric", "keys", "constraint"),
    [
        (
            "instruction_fidelity",
            ("alignment", "completeness", "plausibility"),
            "For alignment: compare how accurately the two images interpret and carry out",
        ),
        (
            "edit_quality",
            (
                "scale_realism",
                "spatial_relationship",
                "texture_and_detail",
                "image_quality",
                "color_and_lighting",
                "seamlessness",
            ),
            "Be precise: say where in the images each difference is.",
        ),
    ],
)
def test_offline_factor_prompt_through_the_cli(env, rubric, keys, constraint):
    # what the judge receives over HTTP: every factor stated against the ground truth, the
    # specification's constraints; and a placeholder image_id does not cost a re-ask
    samples = write_samples(
        env / "s.jsonl",
        [
            {
                "id": "e1",
                "task": "text_guided_ie",
                "model": "gen",
                "instruction": "add a hat",
                "images": {
                    "source": "source.png",
                    "ground_truth": "ground_truth.png",
                    "output": "output.png",
                },
            }
        ],
    )

    def judge(body: dict[str, Any]) -> str:
        results = {k: {"score": 4, "justification": WORDS} for k in keys}
        return json.dumps({"image_id": "<image_identifier>", "offline_factor_results": results})

    out = env / "f.jsonl"
    with FakeOpenAIServer(judge) as server:
        assert evaluate(server, samples, out, "--rubric", rubric) == 0
        (request,) = server.requests
    text = "\n".join(request.texts())
    blocks = factor_blocks(text)
    assert tuple(blocks) == keys
    for key, block in blocks.items():
        assert "ground truth" in block["definition"], key
        assert block["high"] and block["low"], key
        assert all("ground truth" in bullet for bullet in block["high"] + block["low"]), key
    assert constraint in text
    assert len(request.image_urls()) == 2  # the ground truth, then the edited image

    (record,) = read_records(out)
    assert record["status"] == "ok" and record["score"] == pytest.approx(0.5)
    assert record["details"]["mode"] == "offline"
    assert record["details"]["image_id"] == "<image_identifier>"
    assert "instead of the sample id 'e1'" in record["details"]["warnings"][0]
