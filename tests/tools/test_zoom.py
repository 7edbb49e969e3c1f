"""The Zoom tool, from the judge's side: the crops in the judge's request show the region (read
back from the request's own bytes, checked against the original pixels), at full resolution,
in each image's own pixels; which region (a box the planner names, the regions an earlier
round found, Difference's); and where it is offered (`extended` by default, `--tools Zoom`)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.config import EvalConfig
from cigeval.messages import ImagePart, ModelRequest
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.tools import Box, GroundingTool, resolve_tools
from cigeval.tools.registry import TOOLS
from cigeval.tools.zoom import query_box, windows_for

NO_CACHE = RunConfig(use_cache=False, preflight=False)
#: The source's size, the output's (another: each crop is in its own image's pixels), and the
#: small square that changed (source pixels).
SOURCE, OUTPUT = (400, 300), (320, 240)
CHANGE = (300, 60, 330, 84)


def _textured(size: tuple[int, int], seed: int) -> Image.Image:
    """A picture with detail everywhere, so a crop of the wrong place cannot pass for the
    right one."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (size[1] // 8, size[0] // 8, 3), dtype=np.uint8)
    return Image.fromarray(small).resize(size, Image.Resampling.BICUBIC)


@pytest.fixture
def pair(tmp_path: Path) -> dict[str, Any]:
    source = _textured(SOURCE, 1)
    edited = source.copy()
    ImageDraw.Draw(edited).rectangle((CHANGE[0], CHANGE[1], CHANGE[2] - 1, CHANGE[3] - 1),
                                     fill=(255, 0, 255))  # fmt: skip
    source.save(tmp_path / "source.png")
    edited.resize(OUTPUT, Image.Resampling.LANCZOS).save(tmp_path / "output.png")
    return {"id": "p", "task": "text_guided_ie", "instruction": "add a magenta square",
            "images": {"source": "source.png", "output": "output.png"}}  # fmt: skip


def _planner(tool: str, query: str = "") -> Any:
    """A planner choosing ``tool`` (with ``query``) for every sub-question; a judge scoring 6."""

    def reply(request: ModelRequest) -> str:
        text = request_text(request)
        if "### Questions" in text:
            ids = re.findall(r"- task_id (\d+):", text)
            return json.dumps([{"task_id": i, "reasoning": "small", "used": "yes", "tool": tool,
                                "query": query} for i in ids])  # fmt: skip
        return '{"score": 6, "reasoning": "ok"}'

    return reply


def _judged(folder: Path, fields: dict[str, Any], reply: Any, **config: Any):
    backend = ScriptedBackend(reply)
    sample = sample_from_dict(fields, base_dir=folder)
    config.setdefault("method", "extended")
    score = Evaluator(backend, run_config=NO_CACHE, **config).evaluate(sample)
    assert score.status == "ok", score.error
    return score, [r for r in backend.requests if "RULES:" in request_text(r)]


def _crops(request: ModelRequest) -> dict[str, Image.Image]:
    """The Zoom crops a judge request carries, by the role they were cut from, decoded from
    the bytes sent."""
    parts = [p for m in request.messages for p in m.parts if isinstance(p, ImagePart)]
    return {
        p.label.split(":", 1)[1]: Image.open(io.BytesIO(p.image.data)).convert("RGB")
        for p in parts
        if p.label.startswith("Zoom:")
    }


def _shows(crop: Image.Image, original: Image.Image, window: tuple[float, ...]) -> bool:
    """Whether ``crop`` is ``window`` of ``original`` enlarged: shrunk back to the window's
    size it matches the original's pixels there (PSNR over 30 dB)."""
    x0, y0, x1, y1 = (round(v) for v in window)
    back = np.asarray(crop.resize((x1 - x0, y1 - y0), Image.Resampling.BOX), dtype=float)
    there = np.asarray(original.convert("RGB").crop((x0, y0, x1, y1)), dtype=float)
    mse = float(np.mean((back - there) ** 2))
    return mse == 0 or 10 * np.log10(255**2 / mse) > 30


def test_a_named_box_reaches_the_judge_enlarged_from_each_image(tmp_path, pair):
    score, requests = _judged(tmp_path, pair, _planner("Zoom", "[300, 60, 330, 84]"))
    source = Image.open(tmp_path / "source.png")
    output = Image.open(tmp_path / "output.png")
    for request, sub in zip(requests, score.sub_scores, strict=True):
        crops = _crops(request)
        assert list(crops) == ["source", "output"]
        # after the whole images, never in their place, at each image's own size
        labels = [p.label for m in request.messages for p in m.parts if isinstance(p, ImagePart)]
        assert labels == ["source", "output", "Zoom:source", "Zoom:output"]
        assert crops["source"].size == SOURCE and crops["output"].size == OUTPUT
        windows = {e.role: e.box for e in sub.evidence if e.label == "zoomed region"}
        src, out = windows["source"], windows["output"]
        assert src[0] <= CHANGE[0] and src[1] <= CHANGE[1]
        assert src[2] >= CHANGE[2] and src[3] >= CHANGE[3]
        # 30x24 with a quarter of 30 around it (45x39), widened to the image's shape
        assert (src[2] - src[0]) / (src[3] - src[1]) == pytest.approx(400 / 300, rel=0.02)
        assert src[3] - src[1] == pytest.approx(24 + 2 * 7.5, abs=1) and src[2] <= 400
        assert out == pytest.approx(tuple(v * 0.8 for v in src), abs=0.5)  # its own pixels
        assert _shows(crops["source"], source, src)
        assert _shows(crops["output"], output, out)
        assert not _shows(crops["source"], source, (src[0] - 40, src[1], src[2] - 40, src[3]))
        assert sub.tool_image_ids.keys() == {"source (zoom 1)", "output (zoom 1)"}
        assert "enlarged 7.7x" in request_text(request)  # 400 / 52


def test_without_a_region_zoom_enlarges_what_difference_found(tmp_path, pair):
    score, requests = _judged(tmp_path, pair, _planner("Zoom"), tools=("Zoom", "Difference"))
    source = Image.open(tmp_path / "source.png")
    sub = score.sub_scores[0]
    found = [e for e in sub.evidence if e.tool == "Difference"]
    assert found and all(e.label == "changed" for e in found)
    assert {e.role for e in found} == {"source", "output"}
    (window,) = [e.box for e in sub.evidence if e.tool == "Zoom" and e.role == "source"]
    assert window[0] <= CHANGE[0] and window[2] >= CHANGE[2]
    assert window[1] <= CHANGE[1] and window[3] >= CHANGE[3]
    assert _shows(_crops(requests[0])["source"], source, window)
    assert "from the Difference tool" in sub.tool_output


def test_zoom_in_a_later_round_enlarges_what_the_earlier_round_found(tmp_path, pair):
    class Corner:
        def cache_key(self, sha: str, query: str) -> str:
            return f"corner:{sha}:{query}"

        def detect(self, image: Image.Image, query: str) -> list[Box]:
            w, h = image.size
            return [Box(w * 0.1, h * 0.1, w * 0.2, h * 0.2, label="thing", score=0.9)]

    asked: list[str] = []

    def reply(request: ModelRequest) -> str:
        text = request_text(request)
        if "### Questions" in text:
            return _planner("Grounding", "thing")(request)
        asked.append(text)
        if "Round 2" not in text:
            return '{"thought": "too small to see", "tool": "Zoom", "query": ""}'
        return '{"score": 5, "reasoning": "seen"}'

    with TOOLS.scoped():
        TOOLS.register("Grounding", GroundingTool(detector=Corner()), replace=True)  # type: ignore[arg-type]
        score, requests = _judged(tmp_path, pair, reply, tools=("Grounding", "Zoom"), max_rounds=2)
    sub = score.sub_scores[0]
    assert [s.tool for s in sub.tool_steps] == ["Grounding", "Zoom"]
    (thing,) = [e.box for e in sub.evidence if e.round == 1 and e.role == "source"]
    (window,) = [e.box for e in sub.evidence if e.round == 2 and e.role == "source"]
    assert thing == pytest.approx((40, 30, 80, 60))
    assert window[0] <= 40 and window[1] <= 30 and window[2] >= 80 and window[3] >= 60
    assert "the regions found before" in sub.tool_output
    crops = _crops(requests[-1])  # shown in the round-2 turn
    assert _shows(crops["source"], Image.open(tmp_path / "source.png"), window)


def test_zoom_is_offered_by_default_under_extended_only():
    paper = [t.name for t in resolve_tools(None, "paper")]
    extended = [t.name for t in resolve_tools(None, "extended")]
    assert "Zoom" not in paper and "Zoom" in extended
    assert [t.name for t in resolve_tools(["zoom"])] == ["Zoom"]
    assert EvalConfig(method="paper").tools is None


def test_named_under_the_paper_method_it_is_not_run(tmp_path, pair):
    judge = rule_judge(tools={"edit_success": "Zoom"})
    score, requests = _judged(tmp_path, pair, judge, method="paper", tools=("Zoom",))
    sub = score.sub_scores[0]
    note = sub.note or ""
    assert sub.degraded and "the judge chose Zoom, a tool the paper's method does not have" in note
    assert "(tool_use='any' runs it)" in note  # the option in Python's words
    assert sub.evidence == [] and not any(_crops(r) for r in requests)


def test_the_framing_of_regions():
    # a box given as fractions of the sides
    assert query_box("0.5, 0.5, 0.75, 1", 400, 300) == Box(200, 150, 300, 300, "requested region")
    assert query_box("the red car", 400, 300) is None
    # two regions far apart are cropped apart, the larger first; near ones as one
    far = windows_for([Box(10, 10, 30, 30), Box(300, 200, 360, 260)], 400, 300, _zoom())
    assert len(far) == 2 and far[0].box.x0 > 200
    near = windows_for([Box(10, 10, 30, 30), Box(35, 12, 50, 30)], 400, 300, _zoom())
    assert len(near) == 1
    # a region as large as the image is not enlarged
    assert windows_for([Box(0, 0, 390, 290)], 400, 300, _zoom()) == []
    # at most max_crops
    many = [Box(x, 10, x + 4, 14) for x in range(0, 400, 80)]
    assert len(windows_for(many, 400, 300, _zoom(max_crops=2))) == 2


def _zoom(**fields: Any):
    from cigeval.tools import ZoomConfig

    return ZoomConfig(**fields)
