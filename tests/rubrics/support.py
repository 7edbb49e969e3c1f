"""Helpers for rubric tests: coloured images, samples, runs and reply inspection."""

from __future__ import annotations

import json
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
    """The hash of an image as the rubrics encode it."""
    return EncodedImage.from_pil(picture).sha256


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
    """An Evaluator over ``backend`` without the on-disk cache."""
    return Evaluator(backend, rubric=rubric, run_config=RunConfig(use_cache=False), **config)


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
