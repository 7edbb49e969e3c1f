"""Turning a request's items into samples: base64 images decoded, paths checked against the
image root, sizes checked against the pixel limit. A bad item becomes its own problem."""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from typing import Any

from cigeval.serve.models import ImageField, ScoreItem
from cigeval.serve.settings import ServeConfig


class ItemProblem(ValueError):
    """Why one item cannot be judged (its own error; the batch goes on)."""


@dataclass(frozen=True)
class PreparedItem:
    """An item ready for the judge: its sample dict, or the problem that stops it."""

    index: int
    id: str
    group: str | None
    sample: dict[str, Any] | None
    problem: str | None = None


def image_bytes(data: bytes, settings: ServeConfig, what: str) -> bytes:
    """``data`` if it is an image within the pixel limit; else an ItemProblem naming ``what``."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ItemProblem(f"{what}: not a readable image ({type(exc).__name__})") from None
    if width * height > settings.max_pixels:
        raise ItemProblem(
            f"{what}: {width}x{height} pixels is over the server's limit of "
            f"{settings.max_pixels} (--max-pixels)"
        )
    return data


def decode_b64_image(text: str, settings: ServeConfig, what: str) -> bytes:
    """Base64 image bytes, checked (an ItemProblem when not an image or too large)."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ItemProblem(f"{what}: not valid base64") from None
    return image_bytes(data, settings, what)


def _inside_root(text: str, settings: ServeConfig, what: str) -> bytes:
    root = settings.image_root
    if root is None:
        raise ItemProblem(f"{what}: image paths are refused (the server has no --image-root)")
    base = root.resolve()
    path = (base / text).resolve()
    if not path.is_relative_to(base):
        raise ItemProblem(f"{what}: path is outside the server's --image-root")
    if not path.is_file():
        raise ItemProblem(f"{what}: no such file under --image-root")
    return image_bytes(path.read_bytes(), settings, what)


def _role_images(
    given: dict[str, ImageField], settings: ServeConfig, read: Any, kind: str
) -> dict[str, Any]:
    images: dict[str, Any] = {}
    for role, value in given.items():
        if isinstance(value, list):
            images[role] = [read(v, settings, f"{kind} {role}[{i}]") for i, v in enumerate(value)]
        else:
            images[role] = read(value, settings, f"{kind} {role}")
    return images


def prepare(item: ScoreItem, index: int, settings: ServeConfig) -> PreparedItem:
    """The sample of ``item`` (the ``index``-th of its batch), or why it has none."""
    item_id = item.id if item.id is not None else str(index)
    try:
        images = _role_images(item.images, settings, decode_b64_image, "image")
        both = set(images) & set(item.image_paths)
        if both:
            raise ItemProblem(f"role(s) {sorted(both)} given both as base64 and as a path")
        images.update(_role_images(item.image_paths, settings, _inside_root, "image path"))
    except ItemProblem as exc:
        return PreparedItem(index, item_id, item.group, None, str(exc))
    text = item.model_dump(
        include={"prompt", "instruction", "subject", "concepts", "control_type"},
        exclude_none=True,
    )
    sample = {
        "id": item_id,
        "task": item.task or settings.default_task,
        **text,
        "images": images,
        "metadata": item.metadata,
    }
    return PreparedItem(index, item_id, item.group, sample)


def sample_of(
    index: int,
    prompt: str,
    output: bytes,
    settings: ServeConfig,
    *,
    source: bytes | None = None,
    group: str | None = None,
    item_id: str | None = None,
) -> PreparedItem:
    """A T2I item (``prompt`` + ``output``), or an editing one when ``source`` is given:
    the shape the trainers' protocols (UniRL, Flow-GRPO) send."""
    item_id = item_id or str(index)
    try:
        images = {"output": image_bytes(output, settings, "image")}
        if source is not None:
            images["source"] = image_bytes(source, settings, "source image")
    except ItemProblem as exc:
        return PreparedItem(index, item_id, group, None, str(exc))
    if source is None:
        sample = {"id": item_id, "task": settings.default_task, "prompt": prompt}
    else:
        sample = {"id": item_id, "task": settings.edit_task, "instruction": prompt}
    return PreparedItem(index, item_id, group, {**sample, "images": images})


__all__ = ["ItemProblem", "PreparedItem", "decode_b64_image", "image_bytes", "prepare", "sample_of"]
