"""Helpers for backend tests: small images and requests."""

from __future__ import annotations

from PIL import Image

from cigeval.backends.policy import CallPolicy
from cigeval.images import EncodedImage
from cigeval.messages import GenerationSettings, ImagePart, Message, ModelRequest, Part, TextPart

#: An API key that must never show up in errors, reprs, logs or cache files.
SECRET_KEY = "sk-test-DO-NOT-LEAK-7f3a9c"


def make_image(
    color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 6)
) -> EncodedImage:
    """A small solid-colour encoded image."""
    return EncodedImage.from_pil(Image.new("RGB", size, color))


def image_request(
    text: str = "Rate the image.",
    images: tuple[EncodedImage, ...] = (),
    *,
    system: str | None = "You are a judge.",
    settings: GenerationSettings | None = None,
) -> ModelRequest:
    """A request with an optional system message and one user message of text + images."""
    messages = []
    if system is not None:
        messages.append(Message.text("system", system))
    parts: tuple[Part, ...] = (
        TextPart(text),
        *(ImagePart(i, f"image{n}") for n, i in enumerate(images)),
    )
    messages.append(Message("user", parts))
    return ModelRequest(tuple(messages), settings or GenerationSettings())


def fast_policy(**changes: object) -> CallPolicy:
    """A call policy with tiny backoff and a short timeout, so retry tests stay fast."""
    options: dict[str, object] = {"retry_backoff_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5}
    options.update(changes)
    return CallPolicy(**options)  # type: ignore[arg-type]
