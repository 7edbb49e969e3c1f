"""Loading images safely and encoding them once for model calls and cache keys."""

from __future__ import annotations

import base64
import hashlib
import io
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from cigeval.errors import InputError

#: Images above this many pixels are refused (decompression-bomb guard). 8192 x 8192.
MAX_PIXELS = 8192 * 8192
#: Image files above this many bytes are refused before they are read (512 MiB: more than an
#: uncompressed 16-bit RGBA image of MAX_PIXELS needs).
MAX_FILE_BYTES = 512 * 1024 * 1024


def load_image(
    image: str | Path | Image.Image,
    *,
    role: str,
    sample_id: str | None = None,
    base_dir: Path | None = None,
    max_pixels: int = MAX_PIXELS,
    max_bytes: int = MAX_FILE_BYTES,
    mask: bool = False,
) -> Image.Image:
    """Open ``image`` as an 8-bit RGB PIL image, or raise :class:`InputError` naming the problem.

    Handles EXIF rotation, palette, alpha (composited on white), 16-bit and float modes.
    A file is checked before it is read whole: its size (at most ``max_bytes``), then its
    header (an image format Pillow reads, at most ``max_pixels`` pixels).
    ``mask=True`` reads an edit mask instead: see :func:`mask_to_rgb` for its alpha channel.
    """
    convert = mask_to_rgb if mask else to_rgb
    if isinstance(image, Image.Image):
        return _check_size(convert(image), role, sample_id, max_pixels)
    path = Path(image)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if not path.exists():
        raise InputError(f"{role} image not found: {path}", sample_id)
    if path.is_dir():
        raise InputError(f"{role} image path is a directory: {path}", sample_id)
    size = path.stat().st_size
    if size == 0:
        raise InputError(f"{role} image is an empty (zero-byte) file: {path}", sample_id)
    if size > max_bytes:
        raise InputError(
            f"{role} image file is too large ({size} bytes, limit {max_bytes} bytes): {path}",
            sample_id,
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            # The header first (Pillow reads only what it needs), then the whole file.
            with Image.open(path) as header:
                _check_header(header.size, role, sample_id, max_pixels, path)
            data = path.read_bytes()
            with Image.open(io.BytesIO(data)) as opened:
                _check_header(opened.size, role, sample_id, max_pixels, path)
                opened.load()
                file_format, original_mode = opened.format, opened.mode
                rotated = opened.getexif().get(_EXIF_ORIENTATION, 1) != 1
                loaded = ImageOps.exif_transpose(opened)
    except InputError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        message = f"{role} image refused as a decompression bomb: {path} ({exc})"
        raise InputError(message, sample_id) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        message = f"{role} image is corrupt or not an image: {path} ({exc})"
        raise InputError(message, sample_id) from None
    rgb = convert(loaded)
    mime = _PASSTHROUGH_MIME.get(file_format or "")
    if mime is not None and original_mode == "RGB" and not rotated:
        # The file already is what a model accepts: send its bytes instead of re-encoding.
        # Tagged with the pixel store's identity: a copy (which would keep ``info``) does not
        # match, so an edited copy is never sent as the original file.
        rgb.info[RAW_BYTES_KEY] = (data, mime, id(rgb.im), str(path.resolve()))
    return rgb


#: Key in ``Image.info`` holding (file bytes, mime, pixel store id, file path) of an image
#: that can be sent unchanged.
RAW_BYTES_KEY = "cigeval_raw_bytes"
_PASSTHROUGH_MIME = {"PNG": "image/png", "JPEG": "image/jpeg"}
_EXIF_ORIENTATION = 0x0112


def _check_header(
    size: tuple[int, int], role: str, sample_id: str | None, max_pixels: int, path: Path
) -> None:
    width, height = size
    if width * height > max_pixels:
        raise InputError(
            f"{role} image is too large ({width}x{height} pixels, limit {max_pixels} pixels): "
            f"{path}",
            sample_id,
        )


def _check_size(image: Image.Image, role: str, sample_id: str | None, limit: int) -> Image.Image:
    if image.width * image.height > limit:
        raise InputError(f"{role} image is too large ({image.width}x{image.height})", sample_id)
    if image.width == 0 or image.height == 0:
        raise InputError(f"{role} image is empty ({image.width}x{image.height})", sample_id)
    return image


def to_rgb(image: Image.Image) -> Image.Image:
    """Convert any PIL mode to 8-bit RGB; high bit depths are rescaled, not clipped."""
    if image.mode == "RGB":
        return image
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        array = np.asarray(image, dtype=np.float64)
        low, high = float(array.min()), float(array.max())
        scaled = np.zeros_like(array) if high <= low else (array - low) / (high - low) * 255.0
        return Image.fromarray(scaled.round().astype(np.uint8), mode="L").convert("RGB")
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA"):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def mask_to_rgb(image: Image.Image) -> Image.Image:
    """An edit mask as a black-and-white RGB image: white = the region to edit.

    A mask with transparency marks the edit region by its alpha channel: opaque pixels
    (alpha > 127) are the region, transparent ones the background, whatever their colour.
    (Compositing such a mask on white, as :func:`to_rgb` does, would turn it all white: "edit
    everywhere".) A mask whose alpha is the same everywhere is read from its colours alone.
    """
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        alpha = np.asarray(image.convert("RGBA").getchannel("A"))
        if alpha.min() != alpha.max():
            region = np.where(alpha > 127, 255, 0).astype(np.uint8)
            return Image.fromarray(region, mode="L").convert("RGB")
        return image.convert("RGB")  # uniform alpha: the colours carry the mask
    return to_rgb(image)


def load_mask(image: Image.Image) -> np.ndarray:
    """A boolean mask (True = region to edit) from an RGB image of the mask."""
    gray = np.asarray(image.convert("L"))
    return gray > 127


@dataclass(frozen=True)
class EncodedImage:
    """An image encoded once (PNG), with its content hash for cache keys and traces."""

    data: bytes = field(repr=False)
    mime: str
    sha256: str
    width: int
    height: int
    #: The file these exact bytes were read from, when the image is sent unchanged.
    source: str | None = None

    @classmethod
    def from_pil(cls, image: Image.Image, fmt: str = "PNG") -> EncodedImage:
        """Encode a PIL image. PNG is lossless; JPEG is smaller for very large images.

        An RGB PNG or JPEG file opened by :func:`load_image` keeps its original bytes, which
        are sent unchanged (no re-encoding, no generation loss).
        """
        raw = image.info.get(RAW_BYTES_KEY)
        if raw is not None and raw[2] == id(image.im):
            data, mime, _, source = raw
            digest = hashlib.sha256(data).hexdigest()
            return cls(data, mime, digest, image.width, image.height, source)
        buffer = io.BytesIO()
        rgb = to_rgb(image)
        if fmt.upper() == "JPEG":
            rgb.save(buffer, format="JPEG", quality=95)
            mime = "image/jpeg"
        else:
            rgb.save(buffer, format="PNG", compress_level=1)
            mime = "image/png"
        data = buffer.getvalue()
        return cls(data, mime, hashlib.sha256(data).hexdigest(), rgb.width, rgb.height)

    @cached_property
    def _data_uri(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def data_uri(self) -> str:
        """The image as a ``data:`` URI, the form OpenAI-compatible servers accept (built
        once per encoded image)."""
        return self._data_uri

    def to_pil(self) -> Image.Image:
        """Decode back to a PIL image."""
        with Image.open(io.BytesIO(self.data)) as img:
            return img.convert("RGB")
