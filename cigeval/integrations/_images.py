"""Image references as inspect_ai passes them (a data URI, a file path or a ``file://`` URL)
turned into what a cigeval sample takes (bytes or a path), and back."""

from __future__ import annotations

import base64
import binascii
import io
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from PIL import Image

from cigeval.errors import InputError


def image_input(reference: str, what: str) -> str | bytes:
    """The bytes of a ``data:`` URI, else the file path ``reference`` names; an ``http(s)``
    URL is refused (the judge reads local images only). ``what`` names the image in errors."""
    if reference.startswith("data:"):
        header, _, payload = reference.partition(",")
        if not header.endswith(";base64") or not payload:
            raise InputError(f"{what} is a data URI without base64 image data")
        try:
            return base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InputError(f"{what} is a data URI whose base64 data is invalid: {exc}") from None
    scheme = urlsplit(reference).scheme.lower()
    if scheme == "file":
        return unquote(urlsplit(reference).path)
    if scheme in ("http", "https"):
        raise InputError(
            f"{what} is a URL ({reference[:120]}); cigeval judges local images only: save it "
            "and record its path, or return the image data in the output"
        )
    return reference


def image_reference(value: Any, base_dir: Path | None) -> str:
    """A sample's image (a path, bytes or a PIL image) as a string inspect_ai can carry: an
    absolute file path, or a PNG data URI for an image held in memory."""
    if isinstance(value, Image.Image):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        value = buffer.getvalue()
    if isinstance(value, bytes | bytearray):
        kind = _mime_type(bytes(value))
        return f"data:{kind};base64,{base64.b64encode(bytes(value)).decode('ascii')}"
    path = Path(value).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return str(path.absolute())


def _mime_type(data: bytes) -> str:
    """The MIME type of image bytes by their signature (PNG unless recognised otherwise)."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"
