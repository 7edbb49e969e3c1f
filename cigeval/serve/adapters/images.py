"""Images as the trainers hold them, made into what the judge reads.

Flow-GRPO passes a float NCHW tensor in [0, 1] (or a uint8 NHWC array, or PIL images);
verl-omni a uint8 ``(C, H, W)`` tensor as ``solution_image``; datasets store images as file
bytes, ``{"bytes": ..., "path": ...}`` (Hugging Face's image feature) or paths. Each becomes
a PIL image (pixels) or the bytes of an image file, never re-encoded lossily: over HTTP,
pixels travel as lossless PNG, so the server judges the same pixels as the in-process path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def batch_images(images: Any) -> list[Any]:
    """One image per item of a batch: a float NCHW tensor or array in [0, 1], a uint8 NHWC
    array, or a sequence of single images (see :func:`one_image`)."""
    import numpy as np

    if hasattr(images, "detach"):  # a torch tensor
        images = images.detach().cpu().numpy()
    if isinstance(images, np.ndarray):
        if images.ndim != 4:
            raise ValueError(f"expected a batch of images (4 dimensions), got {images.shape}")
        return [_array_image(image) for image in images]
    return [one_image(image, f"image {i}") for i, image in enumerate(images)]


def one_image(image: Any, what: str = "image") -> Any:
    """A PIL image or image file bytes for ``image``: a PIL image, file bytes, a
    ``{"bytes": ..., "path": ...}`` dict (Hugging Face's image feature), a path, or one
    image's tensor / array (``CHW`` or ``HWC``; uint8, or floats in [0, 1])."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image
    if isinstance(image, bytes | bytearray | memoryview):
        return bytes(image)
    if isinstance(image, dict):
        if image.get("bytes") is not None:
            return one_image(image["bytes"], what)
        if image.get("path"):
            return one_image(image["path"], what)
        raise ValueError(f"{what}: a dict image needs 'bytes' or 'path'")
    if isinstance(image, str | Path):
        path = Path(image)
        if not path.is_file():
            raise ValueError(f"{what}: no image file at {path}")
        return path.read_bytes()
    if hasattr(image, "detach"):
        image = image.detach().cpu().numpy()
    import numpy as np

    if isinstance(image, np.ndarray):
        if image.ndim == 4 and image.shape[0] == 1:
            image = image[0]
        if image.ndim not in (2, 3):
            raise ValueError(f"{what}: expected one image (CHW or HWC), got shape {image.shape}")
        return _array_image(image)
    raise TypeError(f"{what}: {type(image).__name__} is not an image")


def _array_image(array: Any) -> Any:
    """A PIL image of one CHW or HWC array (uint8, or floats in [0, 1])."""
    import numpy as np
    from PIL import Image

    if array.ndim == 3 and array.shape[0] in (1, 3, 4) and array.shape[-1] not in (1, 3, 4):
        array = array.transpose(1, 2, 0)  # CHW -> HWC
    if array.dtype != np.uint8:
        if not np.issubdtype(array.dtype, np.floating):
            raise ValueError(f"expected uint8 or float pixels, got {array.dtype}")
        array = (np.clip(array, 0.0, 1.0) * 255).round().astype(np.uint8)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    return Image.fromarray(np.ascontiguousarray(array))


def file_bytes(image: Any) -> bytes:
    """Image file bytes for ``image`` (a PIL image or file bytes): pixels as lossless PNG."""
    if isinstance(image, bytes):
        return image
    from cigeval.images import encode_pixels, to_rgb

    return encode_pixels(to_rgb(image), "PNG")
