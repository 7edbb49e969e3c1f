"""Scene Graph: one judge call per distinct image per sample, lenient JSON extraction."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from PIL import Image

from cigeval.errors import BackendError
from cigeval.messages import ImagePart, Message
from cigeval.tools import SceneGraphTool
from cigeval.tools.scene_graph import json_or_none

from .conftest import MakeCtx

GRAPH = {"objects": [{"id": "cat_1", "name": "cat", "attributes": ["black"]}], "relationships": []}


class FakeJudge:
    """An async call_model that records each call and answers after a short pause."""

    def __init__(self, reply: str | None = None, fail_first: bool = False) -> None:
        self.calls: list[tuple[str, list[Message]]] = []
        self.reply = reply
        self.fail_first = fail_first

    async def __call__(self, purpose: str, messages: list[Message]) -> str:
        self.calls.append((purpose, messages))
        await asyncio.sleep(0.02)  # let concurrent sub-questions overlap
        if self.fail_first and len(self.calls) == 1:
            raise BackendError("server unavailable")
        if self.reply is not None:
            return self.reply
        sha = messages[0].images()[0].sha256[:8]
        graph = {**GRAPH, "scene": sha}
        return f"Here is the graph:\n```json\n{json.dumps(graph)}\n```\nHope it helps."


def _images(*colours: str) -> list[Image.Image]:
    return [Image.new("RGB", (32, 32), colour) for colour in colours]


def test_json_or_none_variants() -> None:
    assert json_or_none('{"a": 1}') == {"a": 1}
    assert json_or_none('```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}
    assert json_or_none('Sure! ```\n{"a": 2}\n``` done') == {"a": 2}
    assert json_or_none('The graph is {"a": "x}"} and that is all.') == {"a": "x}"}
    assert json_or_none("noise {not json} then [1, 2]") == [1, 2]
    assert json_or_none("a cat on a mat") is None
    assert json_or_none('"just a string"') is None


async def test_shared_images_cost_one_call_each(make_ctx: MakeCtx) -> None:
    source, output = _images("red", "blue")
    judge = FakeJudge()
    memo: dict[str, Any] = {}
    images = {"source": source, "output": output}
    ctxs = [
        make_ctx("text_guided_ie", q, images, call_model=judge, memo=memo, instruction="x")
        for q in ("edit_success", "over_editing")
    ]
    first, second = await asyncio.gather(*(SceneGraphTool().run(c) for c in ctxs))
    assert len(judge.calls) == 2
    assert {purpose for purpose, _ in judge.calls} == {"scene_graph"}
    sent = {m[0].images()[0].sha256 for _, m in judge.calls}
    assert sent == {ctxs[0].encode(source).sha256, ctxs[0].encode(output).sha256}
    assert first.text == second.text
    assert not first.highlighted and first.images == {}
    assert first.text.index("Scene graph of the source image:") < first.text.index(
        "Scene graph of the output image:"
    )
    assert first.data["parsed"] == {"source": True, "output": True}
    assert first.data["scene_graphs"]["source"]["objects"] == GRAPH["objects"]


async def test_three_distinct_images_across_sub_questions(make_ctx: MakeCtx) -> None:
    source, subject, output = _images("red", "green", "blue")
    judge = FakeJudge()
    memo: dict[str, Any] = {}
    images = {"source": source, "subject": subject, "output": output}
    ctxs = [
        make_ctx("subject_driven_ie", q, images, call_model=judge, memo=memo, subject="cat")
        for q in ("subject_similarity", "background_preservation")
    ]
    await asyncio.gather(*(SceneGraphTool().run(c) for c in ctxs))
    assert len(judge.calls) == 3
    # A later sub-question of the same sample reuses the graphs.
    await SceneGraphTool().run(ctxs[0])
    assert len(judge.calls) == 3


async def test_same_image_under_two_roles_is_one_call(make_ctx: MakeCtx) -> None:
    (image,) = _images("red")
    judge = FakeJudge()
    ctx = make_ctx(
        "text_guided_ie",
        "edit_success",
        {"source": image, "output": image.copy()},
        call_model=judge,
    )
    result = await SceneGraphTool().run(ctx)
    assert len(judge.calls) == 1
    assert "source image" in result.text and "output image" in result.text


async def test_request_holds_prompt_and_image(make_ctx: MakeCtx) -> None:
    (image,) = _images("red")
    judge = FakeJudge()
    ctx = make_ctx("text_guided_ig", "prompt_following", {"output": image}, call_model=judge)
    await SceneGraphTool().run(ctx)
    ((_, messages),) = judge.calls
    assert len(messages) == 1 and messages[0].role == "user"
    prompt = messages[0].text_content()
    for word in ("objects", "attributes", "relationships", "JSON"):
        assert word in prompt
    parts = [p for p in messages[0].parts if isinstance(p, ImagePart)]
    assert len(parts) == 1 and parts[0].image.sha256 == ctx.encode(image).sha256


async def test_non_json_reply_is_kept_as_text(make_ctx: MakeCtx) -> None:
    (image,) = _images("red")
    judge = FakeJudge(reply="A black cat sits on a red mat next to a window.")
    ctx = make_ctx("text_guided_ig", "prompt_following", {"output": image}, call_model=judge)
    result = await SceneGraphTool().run(ctx)
    assert "A black cat sits on a red mat next to a window." in result.text
    assert "not JSON" in result.text
    assert result.data["parsed"] == {"output": False}
    assert result.data["scene_graphs"] == {"output": None}


async def test_failed_call_is_not_memoised(make_ctx: MakeCtx) -> None:
    (image,) = _images("red")
    judge = FakeJudge(fail_first=True)
    memo: dict[str, Any] = {}
    ctx = make_ctx(
        "text_guided_ig", "prompt_following", {"output": image}, call_model=judge, memo=memo
    )
    with pytest.raises(BackendError):
        await SceneGraphTool().run(ctx)
    result = await SceneGraphTool().run(ctx)
    assert len(judge.calls) == 2 and result.data["parsed"] == {"output": True}


async def test_one_cancelled_waiter_does_not_cancel_the_shared_call(make_ctx: MakeCtx) -> None:
    (image,) = _images("red")
    judge = FakeJudge()
    memo: dict[str, Any] = {}
    ctx = make_ctx(
        "text_guided_ig", "prompt_following", {"output": image}, call_model=judge, memo=memo
    )
    doomed = asyncio.ensure_future(SceneGraphTool().run(ctx))
    survivor = asyncio.ensure_future(SceneGraphTool().run(ctx))
    await asyncio.sleep(0)
    doomed.cancel()
    result = await survivor
    assert result.data["parsed"] == {"output": True} and len(judge.calls) == 1


async def test_prompt_dir_replaces_the_scene_graph_prompt(make_ctx: MakeCtx, tmp_path) -> None:
    from cigeval.config import EvalConfig

    (tmp_path / "scene_graph.j2").write_text("CCOT VARIANT: list objects, attributes, relations.")
    # the paper layout's request is an exact-text template, sent as written (no stripping)
    (tmp_path / "paper_scene_graph.txt").write_text("\nPAPER VARIANT: a scene graph.\n")
    (output,) = _images("blue")
    for layout, wanted in (
        ("cigeval", "CCOT VARIANT: list objects, attributes, relations."),
        ("official", "\nPAPER VARIANT: a scene graph.\n"),
    ):
        judge = FakeJudge()
        config = EvalConfig(prompt_dir=str(tmp_path), request_layout=layout)
        ctx = make_ctx(
            "text_guided_ig",
            "prompt_following",
            {"output": output},
            call_model=judge,
            config=config,
        )
        await SceneGraphTool().run(ctx)
        ((_, messages),) = judge.calls
        assert messages[0].text_content() == wanted, layout
