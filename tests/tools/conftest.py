"""Fixtures for the tools tests: offline hub, and ToolContext built from plain images."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from PIL import Image

from cigeval.config import EvalConfig
from cigeval.images import EncodedImage
from cigeval.messages import Message
from cigeval.sample import Sample
from cigeval.tasks import get_task
from cigeval.tools.base import ToolCache, ToolContext

# Set at import, before any test imports transformers: a failed hub lookup must fail fast.
os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


class DictCache:
    """An in-memory ToolCache that counts reads and writes."""

    def __init__(self) -> None:
        self.store: dict[str, Any] = {}
        self.gets = 0
        self.sets = 0

    def get(self, key: str) -> Any | None:
        self.gets += 1
        return self.store.get(key)

    def set(self, key: str, value: Any) -> None:
        self.sets += 1
        self.store[key] = value


async def _no_model(purpose: str, messages: list[Message]) -> str:
    raise AssertionError(f"unexpected model call ({purpose})")


def _memo_encode() -> Callable[[Image.Image, EvalConfig], EncodedImage]:
    seen: dict[tuple[int, str], tuple[Image.Image, EncodedImage]] = {}

    def encode(image: Image.Image, config: EvalConfig) -> EncodedImage:
        key = (id(image), config.image_encoding)
        hit = seen.get(key)
        if hit is None or hit[0] is not image:
            encoded = EncodedImage.from_pil(image, encoding=config.image_encoding)
            hit = (image, encoded)
            seen[key] = hit
        return hit[1]

    return encode


MakeCtx = Callable[..., ToolContext]


@pytest.fixture
def make_ctx() -> MakeCtx:
    """Build a ToolContext for sub-question ``question`` (an id) of task ``task``.

    Without ``config`` the tools run under the ``extended`` method, whose observations these
    tests read (box lists, counts, coverage); tests of the paper method pass its config.
    """
    encode = _memo_encode()

    def build(
        task: str,
        question: str,
        images: dict[str, Image.Image],
        *,
        query: str | None = None,
        call_model: Callable[[str, list[Message]], Awaitable[str]] = _no_model,
        memo: dict[str, Any] | None = None,
        cache: ToolCache | None = None,
        config: EvalConfig | None = None,
        **fields: Any,
    ) -> ToolContext:
        spec = get_task(task)
        sub = next(q for q in spec.sub_questions if q.id == question)
        chosen = config or EvalConfig(method="extended")
        return ToolContext(
            sample=Sample(id="s1", task=task, **fields),
            question=sub,
            images=images,
            config=chosen,
            query=query,
            call_model=call_model,
            encode=lambda image: encode(image, chosen),
            memo={} if memo is None else memo,
            cache=cache,
        )

    return build
