"""Fidelity through the command line against an OpenAI-compatible server: the side-by-side
split, multi-round history, fallbacks, tool presets and prompt variants."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from cigeval.results.jsonl import read_records
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer, RecordedRequest
from cigeval.testing.samples_factory import write_jsonl
from cigeval.tools import ToolContext, ToolResult
from cigeval.tools.registry import TOOLS
from tests.cli_support import evaluate_cli
from tests.judge_view import fidelity_samples, jpeg75, with_ids
from tests.official_stand_in import paper_prompt_dir


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _samples(env: Path, *tasks: str, **changes: Any) -> Path:
    records = [r for r in with_ids(fidelity_samples(env)) if r["task"] in tasks]
    return write_jsonl(env / "samples.jsonl", [{**r, **changes} for r in records])


def _decoded(url: str) -> Image.Image:
    data = base64.b64decode(url.split(",", 1)[1])
    return Image.open(io.BytesIO(data)).convert("RGB")


def _judge(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if "RULES:" in request_text(r.body)]


def _plan_with(*tools: str) -> str:
    entries = [
        {"task_id": str(i), "reasoning": "-", "used": "yes", "tool": tool}
        for i, tool in enumerate(tools, start=1)
    ]
    return json.dumps(entries)


def test_side_by_side_concepts_are_split_through_the_cli(env: Path) -> None:
    samples = _samples(env, "multi_concept_ic")
    samples.write_text(
        "".join(
            json.dumps({k: v for k, v in json.loads(line).items() if k != "concepts"}) + "\n"
            for line in samples.read_text().splitlines()
        )
    )
    out = env / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, "--tools", "") == 0
        requests = list(server.requests)
    (record,) = read_records(out)
    assert record["status"] == "ok"
    pair = Image.open(env / "pair.png").convert("RGB")
    middle = pair.width // 2
    halves = {
        "left": pair.crop((0, 0, middle, pair.height)),
        "right": pair.crop((middle, 0, pair.width, pair.height)),
    }
    concept_requests = [
        r for r in _judge(requests) if "the concept shown in the" in request_text(r.body)
    ]
    assert len(concept_requests) == 2
    seen = set()
    for request in concept_requests:
        text = request_text(request.body)
        side = "left" if "the concept shown in the left half" in text else "right"
        # the paper layout names the concept by its half (its images carry no labels)
        assert f"Subject: the concept shown in the {side} half of the reference image" in text
        # sent as the official code sends it (the paper method): JPEG at quality 75
        sent = base64.b64decode(request.image_urls()[0].split(",", 1)[1])
        assert request.image_urls()[0].startswith("data:image/jpeg;base64,")
        assert sent == jpeg75(halves[side])
        seen.add(side)
    assert seen == {"left", "right"}
    # the halves shown are recorded, by role
    assert set(record["input_images"]) >= {"subject_1", "subject_2", "output"}


def _two_rounds(second_tool: str) -> Any:
    """Plan Difference for edit success; its judge asks for ``second_tool``, then scores 4."""

    def reply(body: dict[str, Any]) -> str:
        text = request_text(body)
        if "### Task" in text:
            return _plan_with("Difference", "None")
        if "carried out" not in text and "carries out" not in text:  # over-editing
            return '{"score": 9, "reasoning": "minimal"}'
        if "Round 2 of 2" in text:
            return '{"score": 4, "reasoning": "only half was changed"}'
        return json.dumps({"thought": "compare once more", "tool": second_tool, "query": ""})

    return reply


def test_a_second_round_carries_the_first_through_the_cli(env: Path) -> None:
    samples = _samples(env, "text_guided_ie")
    out = env / "results.jsonl"
    with FakeOpenAIServer(_two_rounds("MaskFocus")) as server:
        # the extended method: Difference in text-guided editing, its regions in the text
        flags = ["--max-rounds", "2", "--method", "extended"]
        assert evaluate_cli(server, samples, out, *flags) == 0
        requests = list(server.requests)
    (record,) = read_records(out)
    assert record["status"] == "ok" and record["score"] == pytest.approx(0.4)
    second = next(r for r in requests if "Round 2 of 2" in request_text(r.body))
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert "compare once more" in second.messages[2]["content"]
    first_round = request_text({"messages": second.messages[:2]})
    assert "Difference between the source and the output image" in first_round
    latest = request_text({"messages": second.messages[3:]})
    assert "Round 2 of 2" in latest and "Difference between" in latest
    assert len(second.image_urls()) == 4  # round 1's two images and the tool's two
    steps = record["sub_scores"][0]["tool_steps"]
    assert [(s["round"], s["tool"]) for s in steps] == [(1, "Difference"), (2, "Difference")]
    assert all(s["output"].startswith("Difference between") for s in steps)
    rounds = [e["round"] for e in record["trace"] if e["type"] == "model_call"]
    assert sorted(rounds) == [1, 1, 1, 2]  # plan, two first-round judges, one second round


def test_an_unloadable_grounding_model_fails_the_sample_through_the_cli(env: Path) -> None:
    samples = _samples(env, "text_guided_ie")
    out = env / "results.jsonl"
    flags = ["--max-rounds", "2", "--grounding-checkpoint", str(env / "no-such-model")]
    with FakeOpenAIServer(_two_rounds("Grounding")) as server:
        assert evaluate_cli(server, samples, out, *flags) == 1
    (record,) = read_records(out)
    # a setup error is never hidden behind a fallback
    assert record["status"] == "error" and "no-such-model" in record["error"]


def test_fallbacks_through_the_cli(env: Path) -> None:
    samples = _samples(env, "text_guided_ig")

    class Boom:
        name, description = "Boom", "fails"

        async def run(self, ctx: ToolContext) -> ToolResult:
            raise RuntimeError("kaboom")

    def reply(plan: str) -> Any:
        def answer(body: dict[str, Any]) -> str:
            text = request_text(body)
            return plan if "### Task" in text else '{"score": 7, "reasoning": "ok"}'

        return answer

    with FakeOpenAIServer(reply(_plan_with("Telescope"))) as server:
        assert evaluate_cli(server, samples, env / "unknown.jsonl") == 0
    (unknown,) = read_records(env / "unknown.jsonl")
    assert unknown["status"] == "ok" and unknown["score"] == pytest.approx(0.7)
    assert "the judge chose 'Telescope'" in unknown["sub_scores"][0]["note"]
    assert unknown["sub_scores"][0]["degraded"]
    assert any(e["type"] == "error" and e["stage"] == "fallback" for e in unknown["trace"])
    with TOOLS.scoped():
        TOOLS.register("Boom", Boom())  # type: ignore[arg-type]
        with FakeOpenAIServer(reply(_plan_with("Boom"))) as server:
            assert evaluate_cli(server, samples, env / "fallback.jsonl", "--tools", "Boom") == 0
            failing = ["--tools", "Boom", "--tool-errors", "fail", "--no-cache"]
            assert evaluate_cli(server, samples, env / "fail.jsonl", *failing) == 1
    (fallback,) = read_records(env / "fallback.jsonl")
    assert fallback["status"] == "ok" and "kaboom" in fallback["sub_scores"][0]["note"]
    assert fallback["config"]["tool_errors"] == "fallback"
    (failed,) = read_records(env / "fail.jsonl")
    assert failed["status"] == "error" and "kaboom" in failed["error"]


def test_presets_and_the_scene_graph_prompt_through_the_cli(env: Path) -> None:
    samples = _samples(env, "text_guided_ig")
    # the paper layout's scene-graph request (an exact-text template)
    variant = paper_prompt_dir(env / "variant", paper_scene_graph="VARIANT SCENE GRAPH PROMPT")

    def reply(body: dict[str, Any]) -> str:
        text = request_text(body)
        if "### Task" in text:
            return _plan_with("SceneGraph")
        if "VARIANT SCENE GRAPH PROMPT" in text:
            return '{"objects": [], "relationships": []}'
        return '{"score": 5, "reasoning": "ok"}'

    out = env / "results.jsonl"
    flags = [
        "--prompt-dir", str(variant),
        "--difference-preset", "official", "--diff-threshold", "40",
        "--grounding-preset", "official",
    ]  # fmt: skip
    with FakeOpenAIServer(reply) as server:
        assert evaluate_cli(server, samples, out, *flags) == 0
        texts = [request_text(r.body) for r in server.requests]
    (record,) = read_records(out)
    assert record["status"] == "ok" and record["sub_scores"][0]["tool"] == "Scene Graph"
    assert sum("VARIANT SCENE GRAPH PROMPT" in t for t in texts) == 1
    difference = record["config"]["difference"]
    assert difference["preset"] == "official" and difference["threshold"] == 40
    assert (difference["measure"], difference["max_regions"]) == ("gray", 1)
    grounding = record["config"]["grounding"]
    assert (grounding["box_threshold"], grounding["text_threshold"]) == (0.2, 0.2)


def test_masks_differences_and_default_queries_through_the_cli(env: Path) -> None:
    from tests.tiny_grounding import build_tiny_grounding_dino

    checkpoint = env / "tiny-gdino"
    build_tiny_grounding_dino(checkpoint)
    source = np.full((96, 96, 3), 200, np.uint8)
    output = source.copy()
    output[20:40, 20:40] = (250, 10, 10)  # the requested edit, inside the mask
    output[70:80, 70:80] = (10, 10, 250)  # two changes outside it
    output[4:10, 80:90] = (10, 250, 10)
    mask = np.zeros((96, 96, 4), np.uint8)  # opaque square = edit, transparent elsewhere
    mask[..., :3] = 255
    mask[16:44, 16:44, 3] = 255
    Image.fromarray(source).save(env / "src.png")
    Image.fromarray(output).save(env / "out.png")
    Image.fromarray(mask, "RGBA").save(env / "mask.png")
    sample = {
        "id": "mgie",
        "task": "mask_guided_ie",
        "instruction": "make the square red",
        "images": {"source": "src.png", "mask": "mask.png", "output": "out.png"},
    }
    samples = write_jsonl(env / "samples.jsonl", [sample])

    def reply(body: dict[str, Any]) -> str:
        text = request_text(body)
        if "### Task" in text:
            return _plan_with("Highlight", "MaskFocus")
        return '{"score": 6, "reasoning": "ok"}'

    out = env / "results.jsonl"
    flags = [
        "--grounding-checkpoint", str(checkpoint), "--box-threshold", "0",
        "--text-threshold", "0", "--diff-max-regions", "1", "--method", "extended",
    ]  # fmt: skip
    with FakeOpenAIServer(reply) as server:
        assert evaluate_cli(server, samples, out, *flags) == 0
    (record,) = read_records(out)
    edit, over = record["sub_scores"]
    # Highlight = Grounding of the instruction, as the official code grounds it
    assert edit["tool"] == "Grounding" and edit["tool_query"] == "make the square red"
    # MaskFocus = Difference with the mask read from its alpha channel
    assert over["tool"] == "Difference"
    assert (
        "Mask region (where the edit was asked for), in source pixels: [16, 16, 44, 44]"
        in (over["tool_output"])
    )
    assert "OUTSIDE the mask" in over["tool_output"]
    # --diff-max-regions 1 lists the largest, and says how many there are
    assert over["tool_output"].startswith(
        "Difference between the source and the output image: 3 changed regions"
    )
    assert "(showing the 1 largest of 2)" in over["tool_output"]
