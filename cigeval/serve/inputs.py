"""Turning a request's items into samples: base64 images decoded, paths checked against the
image root (their size before they are read), sizes checked against the pixel limit. Any
problem with one item, whatever raised it (a decompression bomb, a truncated file, a wrong
type), becomes that item's own problem; the batch goes on.

Each item also gets its *group*: the GRPO group it belongs to, for the tie statistics and
``--fill-unscored group-mean``. It is the group the client named (``group``, or
``metadata["group"]``), else the prompt's text together with the condition images (the
source of an edit), so the N samples a trainer draws for one prompt form one group without
the client saying so.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import warnings
from dataclasses import dataclass
from typing import Any

from cigeval._caller import in_callers_words
from cigeval._regular_file import FileTooLargeError, NotRegularFileError, read_regular
from cigeval._validation_text import validation_problems
from cigeval.serve.models import ImageField, ScoreItem
from cigeval.serve.settings import ServeConfig

#: The role of the image being judged; every other role is a condition (a source image...).
OUTPUT_ROLE = "output"


class ItemProblem(ValueError):
    """Why one item cannot be judged (its own error; the batch goes on)."""


@dataclass(frozen=True)
class PreparedItem:
    """An item ready for the judge: its sample dict, or the problem that stops it.

    ``group`` is the group the client named (returned as given); ``group_key`` the group the
    item counts in (the named one, else its prompt and condition images).
    """

    index: int
    id: str
    group: str | None
    sample: dict[str, Any] | None
    problem: str | None = None
    group_key: str | None = None


def group_key(
    named: Any, text: str | None, conditions: list[bytes | str] | None = None
) -> str | None:
    """The group an item counts in: ``named`` when given, else its text and the sha256 of its
    condition images (None when it has neither). A condition is identified by the form it
    came in (base64 text, file bytes, pixels), the same for every item of a protocol."""
    if named is not None:
        return f"group:{named}"
    if text is None and not conditions:
        return None
    digest = hashlib.sha256()
    for data in conditions or []:
        encoded = data.encode("utf-8") if isinstance(data, str) else data
        digest.update(hashlib.sha256(encoded).digest())
    return f"prompt:{text or ''}|{digest.hexdigest()[:16] if conditions else ''}"


def image_bytes(data: bytes, settings: ServeConfig, what: str) -> bytes:
    """``data`` if it is an image within the server's limits; else an ItemProblem naming
    ``what``. Only the header is read (no pixels are decoded)."""
    from PIL import Image

    if len(data) > settings.max_image_bytes:
        cap = in_callers_words("--max-image-bytes", "max_image_bytes")
        raise ItemProblem(
            f"{what}: {len(data)} bytes is over the server's limit of "
            f"{settings.max_image_bytes} ({cap})"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
    except Image.DecompressionBombError as exc:
        raise ItemProblem(
            f"{what}: refused as a decompression bomb, over the server's pixel limit of "
            f"{settings.max_pixels} ({in_callers_words('--max-pixels', 'max_pixels')}): {exc}"
        ) from None
    except Exception as exc:
        raise ItemProblem(f"{what}: not a readable image ({type(exc).__name__})") from None
    if width * height > settings.max_pixels:
        raise ItemProblem(f"{what}: {over_pixel_limit(width, height, settings.max_pixels)}")
    return data


def over_pixel_limit(width: int, height: int, max_pixels: int) -> str:
    """Why an image of ``width`` x ``height`` pixels is refused: over ``max_pixels``."""
    option = in_callers_words("--max-pixels", "max_pixels")
    return f"{width}x{height} pixels is over the server's limit of {max_pixels} ({option})"


def decode_b64_image(text: Any, settings: ServeConfig, what: str) -> bytes:
    """Base64 image bytes, checked (an ItemProblem when not an image or too large)."""
    if not isinstance(text, str):
        raise ItemProblem(f"{what}: expected base64 text, got {type(text).__name__}")
    if len(text) > settings.max_image_bytes * 4 // 3 + 4:
        raise ItemProblem(
            f"{what}: over the server's limit of {settings.max_image_bytes} bytes "
            f"({in_callers_words('--max-image-bytes', 'max_image_bytes')})"
        )
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ItemProblem(f"{what}: not valid base64") from None
    return image_bytes(data, settings, what)


def _inside_root(text: str, settings: ServeConfig, what: str) -> bytes:
    root = settings.image_root
    if root is None:
        root_option = in_callers_words("--image-root", "image_root")
        raise ItemProblem(f"{what}: image paths are refused (the server has no {root_option})")
    base = root.resolve()
    path = (base / text).resolve()
    if not path.is_relative_to(base):
        raise ItemProblem(
            f"{what}: path is outside the server's {in_callers_words('--image-root', 'image_root')}"
        )
    # opened without waiting and checked by the open descriptor before a byte is read: a FIFO
    # or device put in the file's place after any earlier look is refused, never waited on
    try:
        data = read_regular(path, settings.max_image_bytes)
    except FileNotFoundError:
        raise ItemProblem(
            f"{what}: no such file under {in_callers_words('--image-root', 'image_root')}"
        ) from None
    except FileTooLargeError as exc:
        cap = in_callers_words("--max-image-bytes", "max_image_bytes")
        raise ItemProblem(f"{what}: {exc.strerror} (the server's {cap})") from None
    except NotRegularFileError:
        root_option = in_callers_words("--image-root", "image_root")
        raise ItemProblem(f"{what}: not a regular file under {root_option}") from None
    return image_bytes(data, settings, what)


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


def _text_of(item: ScoreItem) -> str | None:
    for name in ("prompt", "instruction", "subject"):
        value = getattr(item, name)
        if value is not None:
            return str(value)
    return " | ".join(item.concepts) if item.concepts else None


def _conditions(images: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for role in sorted(images):
        if role != OUTPUT_ROLE:
            value = images[role]
            found += value if isinstance(value, list) else [value]
    return found


def named_group(group: Any, metadata: Any) -> str | None:
    """The group a client named: ``group``, else ``metadata["group"]`` (as text)."""
    if group is None and isinstance(metadata, dict):
        group = metadata.get("group")
    return None if group is None else str(group)


def prepare_raw(raw: Any, index: int, settings: ServeConfig) -> PreparedItem:
    """:func:`prepare` of one item of a parsed body, checked against the item schema
    first (a wrong type is that item's problem)."""
    from pydantic import ValidationError

    try:
        item = ScoreItem.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc, "item")
        item_id = raw.get("id") if isinstance(raw, dict) else None
        item_id = item_id if isinstance(item_id, str) else str(index)
        return PreparedItem(index, item_id, None, None, f"invalid item: {problems}")
    return prepare(item, index, settings)


def prepare(item: ScoreItem, index: int, settings: ServeConfig) -> PreparedItem:
    """The sample of ``item`` (the ``index``-th of its batch), or why it has none."""
    item_id = item.id if item.id is not None else str(index)
    group = named_group(item.group, item.metadata)
    conditions = _conditions({**item.images, **item.image_paths})
    key = group_key(group, _text_of(item), conditions)
    try:
        images = _role_images(item.images, settings, decode_b64_image, "image")
        both = set(images) & set(item.image_paths)
        if both:
            raise ItemProblem(f"role(s) {sorted(both)} given both as base64 and as a path")
        images.update(_role_images(item.image_paths, settings, _inside_root, "image path"))
    except ItemProblem as exc:
        return PreparedItem(index, item_id, group, None, str(exc), key)
    except Exception as exc:  # whatever else one item raises is its own problem
        return PreparedItem(index, item_id, group, None, f"{type(exc).__name__}: {exc}", key)
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
    return PreparedItem(index, item_id, group, sample, group_key=key)


def sample_of(
    index: int,
    prompt: str,
    output: Any,
    settings: ServeConfig,
    *,
    source: Any = None,
    group: str | None = None,
    item_id: str | None = None,
    key: str | None = None,
) -> PreparedItem:
    """A T2I item (``prompt`` + ``output``), or an editing one when ``source`` is given:
    the shape the trainers' protocols (UniRL, Flow-GRPO, EditScore) send. ``output`` and
    ``source`` are image file bytes (checked here) or PIL images (checked when unpickled).
    ``key``: the item's group (default: ``group``, else ``prompt`` and ``source``)."""
    item_id = item_id or str(index)
    if key is None:
        key = group_key(group, prompt, [identity(source)] if source is not None else None)
    try:
        images = {"output": _checked(output, settings, "image")}
        if source is not None:
            images["source"] = _checked(source, settings, "source image")
    except ItemProblem as exc:
        return PreparedItem(index, item_id, group, None, str(exc), key)
    except Exception as exc:  # whatever else one item raises is its own problem
        return PreparedItem(index, item_id, group, None, f"{type(exc).__name__}: {exc}", key)
    if source is None:
        sample = {"id": item_id, "task": settings.default_task, "prompt": prompt}
    else:
        sample = {"id": item_id, "task": settings.edit_task, "instruction": prompt}
    return PreparedItem(index, item_id, group, {**sample, "images": images}, group_key=key)


def _checked(image: Any, settings: ServeConfig, what: str) -> Any:
    if isinstance(image, bytes | bytearray):
        return image_bytes(bytes(image), settings, what)
    from PIL import Image

    if isinstance(image, Image.Image):
        if image.width * image.height > settings.max_pixels:
            problem = over_pixel_limit(image.width, image.height, settings.max_pixels)
            raise ItemProblem(f"{what}: {problem}")
        return image
    raise ItemProblem(f"{what}: expected image file bytes, got {type(image).__name__}")


def identity(image: Any) -> bytes:
    """Bytes that tell an image apart: its file's, its pixels' (a PIL image), else its text."""
    if isinstance(image, bytes | bytearray):
        return bytes(image)
    from PIL import Image

    if isinstance(image, Image.Image):
        return bytes(image.tobytes())
    return repr(image).encode("utf-8", "replace")


__all__ = [
    "ItemProblem",
    "PreparedItem",
    "decode_b64_image",
    "group_key",
    "identity",
    "image_bytes",
    "named_group",
    "over_pixel_limit",
    "prepare",
    "prepare_raw",
    "sample_of",
]
