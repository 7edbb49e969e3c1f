"""Helpers for rubric tests: coloured images, samples, runs and reply inspection."""

from __future__ import annotations

import json
import re
from typing import Any

from PIL import Image

from cigeval.backends.scripted import ScriptedBackend
from cigeval.config import EvalConfig, RunConfig
from cigeval.evaluation import Evaluator
from cigeval.images import EncodedImage
from cigeval.messages import ImagePart, Message, ModelRequest
from cigeval.sample import Sample, load_sample_images
from cigeval.sample_run import SampleRun
from cigeval.session import JudgeSession
from cigeval.trace import Trace

COLOURS = {
    "source": (200, 30, 30),
    "output": (30, 200, 30),
    "ground_truth": (30, 30, 200),
    "mask": (255, 255, 255),
    "subject": (200, 200, 30),
    "control": (30, 200, 200),
}


def image(colour: tuple[int, int, int]) -> Image.Image:
    """A small solid-colour image."""
    return Image.new("RGB", (8, 6), colour)


def sha(picture: Image.Image) -> str:
    """The hash of an image as the rubrics encode it under the default settings (the paper
    method's JPEG at quality 75)."""
    return EncodedImage.from_pil(picture, encoding=EvalConfig().image_encoding).sha256


def output_image(index: int) -> Image.Image:
    """The index-th distinct edited image (1-based)."""
    return image((10 * index % 256, 100, 255 - 10 * index % 256))


def make_sample(task: str = "text_guided_ie", **fields: Any) -> Sample:
    """A sample with coloured images for every role named in ``images`` (default by task)."""
    images = fields.pop("images", None)
    if images is None:
        images = {"source": image(COLOURS["source"]), "output": image(COLOURS["output"])}
    fields.setdefault("instruction", "Replace the snowy ground with a sandy beach.")
    return Sample(id=fields.pop("id", "s1"), task=task, images=images, **fields)


def make_run(sample: Sample, backend: ScriptedBackend, **config: Any) -> SampleRun:
    """A SampleRun built the way the runner builds one."""
    cfg = EvalConfig(**config)
    trace = Trace()
    judge = JudgeSession(backend, cfg.generation(), trace, cfg.max_parse_retries)
    return SampleRun(sample, load_sample_images(sample), cfg, judge, trace)


def evaluator(backend: ScriptedBackend, rubric: str, **config: Any) -> Evaluator:
    """An Evaluator over ``backend`` without the on-disk cache and without the preflight
    (the scripted judges never ask for Grounding, whose weights are not here)."""
    run_config = RunConfig(use_cache=False, preflight=False)
    return Evaluator(backend, rubric=rubric, run_config=run_config, **config)


def user_message(request: ModelRequest, index: int = -1) -> Message:
    """The index-th user message of a request."""
    users = [m for m in request.messages if m.role == "user"]
    return users[index]


def image_hashes(message: Message) -> list[str]:
    """Hashes of the images in a message, in order."""
    return [p.image.sha256 for p in message.parts if isinstance(p, ImagePart)]


def all_text(request: ModelRequest) -> str:
    """Every text part of every message of a request."""
    return "\n".join(m.text_content() for m in request.messages)


def reply(data: Any, prose: str = "") -> str:
    """A JSON reply, optionally wrapped in prose."""
    text = json.dumps(data)
    return f"{prose}\n```json\n{text}\n```\nHope this helps." if prose else text


def factor_blocks(text: str, high: str = "6-7", low: str = "1-3") -> dict[str, dict[str, Any]]:
    """Each factor's block of a factor-rubric prompt, in order: its definition and its
    ``checks``, ``high`` and ``low`` bullets, as the judge reads them (bands of a 1-7 scale
    unless ``high`` / ``low`` name others)."""
    section = text.split("\nFACTORS\n", 1)[1].split("\nIMAGES\n", 1)[0]
    pieces = re.split(r"^\[\d+\] (\w+) \(.*\)$", section, flags=re.MULTILINE)
    headings = {
        "What to inspect:": "checks",
        f"Give {high} when:": "high",
        f"Give {low} when:": "low",
    }
    blocks: dict[str, dict[str, Any]] = {}
    for key, body in zip(pieces[1::2], pieces[2::2], strict=True):
        definition = re.search(r"^What it measures: (.+)$", body, re.MULTILINE)
        assert definition is not None, f"factor {key} has no definition"
        block: dict[str, Any] = {
            "definition": definition.group(1),
            "checks": [],
            "high": [],
            "low": [],
        }
        current = None
        for line in body.splitlines():
            if line in headings:
                current = headings[line]
            elif line.startswith("  - "):
                assert current is not None, f"factor {key}: a bullet outside any list"
                block[current].append(line[4:])
        blocks[key] = block
    return blocks
