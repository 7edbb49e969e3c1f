"""Loading images safely and encoding them once for model calls and cache keys.

Two encodings (``EvalConfig.image_encoding``): ``jpeg75`` sends every image as the official
CIGEval code does (EXIF-transposed, RGB, JPEG at Pillow's default quality 75); ``original``
sends RGB PNG and JPEG files byte for byte and encodes other images as ``image_format``.
Pixels are encoded with OpenCV, whose JPEG bytes equal Pillow's at the same quality
(``tests/test_images.py`` checks it) at about half the time, and whose PNG settings here are
lossless and several times faster than Pillow's.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from cigeval._file_bytes import FileChangedError, ReloadableFileBytes
from cigeval._image_bytes import jpeg_is_whole, png_is_plain
from cigeval._regular_file import (
    MAX_IMAGE_BYTES,
    FileTooLargeError,
    NotRegularFileError,
    open_regular,
    read_capped,
)
from cigeval.errors import InputError

#: Images above this many pixels are refused (decompression-bomb guard). 8192 x 8192.
MAX_PIXELS = 8192 * 8192
#: Image files above this many bytes are refused before they are read (512 MiB: more than an
#: uncompressed 16-bit RGBA image of MAX_PIXELS needs; ``--max-image-bytes`` sets another).
MAX_FILE_BYTES = MAX_IMAGE_BYTES


def load_image(
    image: str | Path | Image.Image | bytes,
    *,
    role: str,
    sample_id: str | None = None,
    base_dir: Path | None = None,
    max_pixels: int = MAX_PIXELS,
    max_bytes: int = MAX_FILE_BYTES,
    mask: bool = False,
    conversion: ImageConversion = "rescale",
) -> LoadedImage:
    """Read ``image`` as a :class:`LoadedImage` (8-bit RGB pixels), or raise
    :class:`InputError` naming the problem.

    ``conversion``: how an image that is not 8-bit RGB becomes so (:data:`CONVERSIONS`):
    ``rescale`` (high bit depths stretched to 0-255, transparency on white) or ``official``
    (Pillow's plain conversion, as the official code: 16-bit values above 255 become white,
    transparency is dropped).

    ``image`` is a path, a PIL image, or the bytes of an image file (as a Hugging Face
    dataset stores them). Handles EXIF rotation, palette, alpha (composited on white), 16-bit
    and float modes. A file is checked before it is read whole: that it is a regular file
    (a FIFO, a device or a folder is refused, never waited on) of at most ``max_bytes``
    bytes, then its header (an image format Pillow reads, at most ``max_pixels``
    pixels). An RGB PNG or JPEG file, or such bytes, keeps its bytes to be sent unchanged.
    ``mask=True`` reads an edit mask instead: see :func:`mask_to_rgb` for its alpha channel.
    """
    convert = mask_to_rgb if mask else CONVERSIONS[conversion]
    if isinstance(image, Image.Image):
        rgb = _check_size(convert(image), role, sample_id, max_pixels)
        return LoadedImage(role, sample_id, *rgb.size, where=f"({role} given as pixels)",
                           _pixels=rgb)  # fmt: skip
    if isinstance(image, bytes | bytearray):
        data = bytes(image)
        where = f"({len(data)} bytes given in memory)"
        if not data:
            raise InputError(f"{role} image is empty (zero bytes given)", sample_id)
        if len(data) > max_bytes:
            message = f"{role} image is too large {where}, limit {max_bytes} bytes"
            raise InputError(message, sample_id)
        return _decode(data, where, None, role, sample_id, max_pixels, convert)
    path = image_path(image, base_dir)
    try:  # a FIFO, a device or a folder is refused before a byte is read, never waited on
        handle = open_regular(path, max_bytes)
    except FileNotFoundError:
        raise InputError(f"{role} image not found: {path}", sample_id) from None
    except NotRegularFileError as exc:
        if os.path.isdir(path):
            raise InputError(f"{role} image path is a directory: {path}", sample_id) from None
        raise InputError(f"{role} image is {exc.strerror}: {path}", sample_id) from None
    except FileTooLargeError:
        size = os.stat(path).st_size
        message = f"{role} image file is too large ({size} bytes, limit {max_bytes} bytes)"
        raise InputError(f"{message}: {path}", sample_id) from None
    except OSError as exc:
        message = f"{role} image cannot be read: {path} ({exc.strerror})"
        raise InputError(message, sample_id) from None
    with handle:
        if os.fstat(handle.fileno()).st_size == 0:
            raise InputError(f"{role} image is an empty (zero-byte) file: {path}", sample_id)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                # The header first (Pillow reads only what it needs), then the whole file.
                with Image.open(handle) as header:
                    _check_header(header.size, role, sample_id, max_pixels, str(path))
                handle.seek(0)
                data = read_capped(handle, max_bytes)
        except InputError:
            raise
        except Exception as exc:
            raise _refused(exc, role, str(path), sample_id) from None
    if len(data) > max_bytes:  # grown since it was opened
        message = f"{role} image file is too large (more than the limit of {max_bytes} bytes)"
        raise InputError(f"{message}: {path}", sample_id)
    return _decode(data, str(path), str(path.resolve()), role, sample_id, max_pixels, convert)


def image_path(image: str | Path, base_dir: Path | None) -> Path:
    """The file an image path of a sample names: a relative path is relative to ``base_dir``
    (the samples file's folder), where one is given."""
    path = Path(image)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path


def _decode(
    data: bytes,
    where: str,
    source: str | None,
    role: str,
    sample_id: str | None,
    max_pixels: int,
    convert: Callable[[Image.Image], Image.Image],
) -> LoadedImage:
    """The image in the bytes of an image file (``source``: the file they were read from).

    A whole RGB PNG or JPEG file without an EXIF rotation is left undecoded (its pixels are
    decoded on first use, :meth:`LoadedImage.pixels`). Any other image is decoded,
    EXIF-transposed and converted now.
    """
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:
                _check_header(opened.size, role, sample_id, max_pixels, where)
                mime = _PASSTHROUGH_MIME.get(opened.format or "")
                if mime is not None and opened.mode == "RGB" and _plain_file(data, opened):
                    held = ReloadableFileBytes(source, data, sha256) if source else None
                    return LoadedImage(role, sample_id, *opened.size, where, sha256, mime,
                                       source, held or data)  # fmt: skip
                opened.load()
                original_mode = opened.mode
                rotated = opened.getexif().get(_EXIF_ORIENTATION, 1) != 1
                loaded = ImageOps.exif_transpose(opened)
    except InputError:
        raise
    except Exception as exc:
        raise _refused(exc, role, where, sample_id) from None
    rgb = convert(loaded)
    if mime is None or original_mode != "RGB" or rotated:
        return LoadedImage(role, sample_id, *rgb.size, where, sha256, _pixels=rgb)
    return LoadedImage(role, sample_id, *rgb.size, where, sha256, mime, source, data, rgb)


def _plain_file(data: bytes, opened: Image.Image) -> bool:
    """Whether the file is whole and holds no EXIF rotation, told without decoding pixels."""
    if opened.format == "PNG":
        return png_is_plain(data)
    whole = jpeg_is_whole(data)  # a JPEG's EXIF block is read with its header
    return whole and opened.getexif().get(_EXIF_ORIENTATION, 1) == 1


@dataclass(frozen=True, eq=False)
class LoadedImage:
    """One image of a sample as :func:`load_image` read it: what it is (size, the sha256
    and MIME type of its file) and its 8-bit RGB pixels, decoded on first use.

    A whole RGB PNG or JPEG file without an EXIF rotation keeps its bytes (``mime`` says
    which) to be sent unchanged, and is decoded only when something needs its pixels (a tool,
    an encoding that re-encodes): once, safely from several threads. Its file's bytes can be
    let go while the sample waits (:meth:`release`); they are read again, checked against
    ``sha256``, when needed. An image derived from another (a half, a resized mask) keeps the
    ``sha256`` of the file it came from but no bytes to send.
    """

    #: The image's place in the sample, as errors name it (``output``, ``subjects[0]``).
    role: str
    sample_id: str | None
    width: int
    height: int
    #: Where it was read from, as errors name it (a path, or how many bytes were given).
    where: str
    #: The sha256 (hex) of the file or bytes it was read from; None for a PIL image given.
    sha256: str | None = None
    #: The MIME type of its file when the file can be sent as it is, else None.
    mime: str | None = None
    #: The absolute path of the file it was read from, when sent unchanged.
    source: str | None = None
    _file: ReloadableFileBytes | bytes | None = field(default=None, repr=False)
    _pixels: Image.Image | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height), from the header: nothing is decoded."""
        return self.width, self.height

    @property
    def decoded(self) -> Image.Image | None:
        """The pixels when they are decoded already, else None."""
        return self._pixels

    def derived(self, pixels: Image.Image) -> LoadedImage:
        """Other pixels made from this image (a half, a resized mask), with its role and file
        hash but no file to send."""
        return LoadedImage(self.role, self.sample_id, *pixels.size, self.where, self.sha256,
                           _pixels=pixels)  # fmt: skip

    def file_bytes(self) -> bytes:
        """The bytes of the file to send unchanged (read again and checked if let go).
        Raises InputError for an image without one (``mime`` is None) or a file changed."""
        if self._file is None:
            raise InputError(f"{self.role} image has no file to send as it is", self.sample_id)
        if isinstance(self._file, bytes):
            return self._file
        try:
            return self._file.data()
        except FileChangedError as exc:
            raise _refused(exc, self.role, self.where, self.sample_id) from None

    def release(self) -> None:
        """Let the bytes of its file go until they are needed again (nothing happens to
        bytes given in memory, or to an image decoded when it was loaded)."""
        if isinstance(self._file, ReloadableFileBytes):
            self._file.release()

    def pixels(self) -> Image.Image:
        """The RGB pixels, decoded from the file on the first call (InputError if damaged)."""
        if self._pixels is None:
            with self._lock:
                if self._pixels is None:
                    object.__setattr__(self, "_pixels", self._decode())
        assert self._pixels is not None
        return self._pixels

    @contextmanager
    def pixels_once(self) -> Iterator[Image.Image]:
        """The pixels for one use that keeps nothing of them (an encoding): an undecoded
        image stays undecoded, its pixels those of a copy freed on exit."""
        if self._pixels is not None:
            yield self._pixels
            return
        copy = self._decode()
        try:
            yield copy
        finally:
            copy.close()

    def __deepcopy__(self, memo: dict[int, object]) -> LoadedImage:
        return self  # a value: only the pixels it decodes once are ever set

    def _decode(self) -> Image.Image:
        try:
            image = Image.open(io.BytesIO(self.file_bytes()))
            image.load()
        except InputError:
            raise
        except Exception as exc:
            raise _refused(exc, self.role, self.where, self.sample_id) from None
        return image


class ImagePixels(Mapping[str, Image.Image]):
    """Roles -> the pixels of loaded images, each decoded when first looked up (a tool that
    never looks at an image never decodes it)."""

    def __init__(self, loaded: Mapping[str, LoadedImage]) -> None:
        self.loaded = loaded

    def __getitem__(self, role: str) -> Image.Image:
        return self.loaded[role].pixels()

    def __contains__(self, role: object) -> bool:
        return role in self.loaded

    def __iter__(self) -> Iterator[str]:
        return iter(self.loaded)

    def __len__(self) -> int:
        return len(self.loaded)


def _refused(exc: Exception, role: str, where: str, sample_id: str | None) -> Exception:
    """The InputError for an image Pillow could not or would not read (other errors as is)."""
    if isinstance(exc, Image.DecompressionBombError | Image.DecompressionBombWarning):
        message = f"{role} image refused as a decompression bomb: {where} ({exc})"
        return InputError(message, sample_id)
    if isinstance(exc, FileChangedError):
        return InputError(f"{role} image refused: {exc}", sample_id)
    if isinstance(exc, UnidentifiedImageError | OSError | SyntaxError | ValueError):
        return InputError(f"{role} image is corrupt or not an image: {where} ({exc})", sample_id)
    return exc


_PASSTHROUGH_MIME = {"PNG": "image/png", "JPEG": "image/jpeg"}
_EXIF_ORIENTATION = 0x0112


def _check_header(
    size: tuple[int, int], role: str, sample_id: str | None, max_pixels: int, where: str
) -> None:
    width, height = size
    if width * height > max_pixels:
        raise InputError(
            f"{role} image is too large ({width}x{height} pixels, limit {max_pixels} pixels): "
            f"{where}",
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


def official_rgb(image: Image.Image) -> Image.Image:
    """Any PIL mode to 8-bit RGB as the official code converts it (``convert("RGB")``):
    16-bit and float values are clipped at 255 (a 16-bit photo turns almost white), alpha
    is dropped (transparent pixels show the colour they hold)."""
    return image if image.mode == "RGB" else image.convert("RGB")


#: How an image that is not 8-bit RGB is converted (``EvalConfig.image_conversion``).
ImageConversion = Literal["official", "rescale"]
CONVERSIONS: dict[str, Callable[[Image.Image], Image.Image]] = {
    "official": official_rgb,
    "rescale": to_rgb,
}


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


#: How images reach the judge: ``jpeg75`` (as the official code sends them) or ``original``.
ImageEncoding = Literal["jpeg75", "original"]
#: The quality of the official code's JPEG images: Pillow's default.
OFFICIAL_JPEG_QUALITY = 75
#: The quality of JPEG images under ``--image-encoding original --image-format JPEG``.
ORIGINAL_JPEG_QUALITY = 95


def encode_pixels(image: Image.Image | np.ndarray, fmt: str, quality: int = 75) -> bytes:
    """The RGB pixels of ``image`` (a PIL image or an ``(h, w, 3)`` uint8 array) as PNG or
    JPEG bytes.

    JPEG bytes are those Pillow writes at the same ``quality`` (baseline, 4:2:0, no Huffman
    optimisation), whichever library writes them: Pillow for a PIL image (from its own
    buffer: no copy of the pixels, no swap of the channels), OpenCV for an array (the tools'
    images), the same libjpeg-turbo settings; nothing of the image's metadata (a comment, an
    EXIF or ICC block) is written. PNG is written by OpenCV, lossless (one filter per row,
    fast Huffman-only compression).
    """
    if isinstance(image, Image.Image) and fmt.upper() == "JPEG":
        written = io.BytesIO()
        # comment=b"": Pillow would copy a comment the decoded file carried (image.info)
        to_rgb(image).save(written, format="JPEG", quality=quality, comment=b"")
        return written.getvalue()
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    pixels = np.asarray(to_rgb(image) if isinstance(image, Image.Image) else image)
    bgr = cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)  # OpenCV writes BGR
    if fmt.upper() == "JPEG":
        ok, buffer = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    else:
        params = [
            cv2.IMWRITE_PNG_COMPRESSION,
            1,
            cv2.IMWRITE_PNG_FILTER,
            cv2.IMWRITE_PNG_FILTER_SUB,
            cv2.IMWRITE_PNG_STRATEGY,
            cv2.IMWRITE_PNG_STRATEGY_HUFFMAN_ONLY,
        ]
        ok, buffer = cv2.imencode(".png", bgr, params)
    if not ok:
        raise ValueError(f"OpenCV could not encode a {pixels.shape} image as {fmt}")
    return buffer.tobytes()


@runtime_checkable
class BytesCache(Protocol):
    """Where :func:`encode_image` keeps encodings (:class:`cigeval.ResponseCache` is one)."""

    def get_bytes(self, key: str) -> bytes | None:
        """The bytes stored under ``key``, or None."""
        ...

    def set_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``."""
        ...


def encode_image(
    image: LoadedImage | Image.Image,
    fmt: str = "PNG",
    *,
    encoding: ImageEncoding = "original",
    cache: object | None = None,
) -> EncodedImage:
    """``image`` encoded for the judge.

    ``encoding="original"``: a loaded RGB PNG or JPEG file is sent byte for byte (no
    re-encoding, no generation loss); any other image is encoded as ``fmt`` (PNG lossless,
    JPEG at quality 95). ``encoding="jpeg75"``: JPEG at quality 75 of the RGB pixels (as the
    official code sends every image), made from a copy of the pixels that is not kept.

    With ``jpeg75`` this is the costliest part of judging a sample whose answers are cached.
    When ``cache`` can hold bytes (:class:`BytesCache`) and ``image`` is such a file, its
    encoding is stored under the sha256 of the file's bytes and the encoder's version, and
    found there the next time the same file is judged (any judge, any settings): the pixels
    are then never decoded. Once encoded as JPEG the file's bytes are let go
    (:meth:`LoadedImage.release`): a sample waiting for its judge holds what the judge is
    sent, and a tool that later needs the pixels reads the file again, refused if changed.
    """
    if isinstance(image, Image.Image):
        return EncodedImage.from_pil(image, fmt, encoding=encoding)
    if encoding == "original":
        if image.mime is None:
            return EncodedImage.from_pil(image.pixels(), fmt, encoding=encoding)
        data = image.file_bytes()
        assert image.sha256 is not None  # a file to send was hashed when read
        return EncodedImage(data, image.mime, image.sha256, *image.size, image.source)
    store = cache if isinstance(cache, BytesCache) and image.mime is not None else None
    key = f"image|jpeg75|opencv-{_opencv_version()}|{image.sha256}"
    found = store.get_bytes(key) if store is not None else None
    if found is not None:
        data = found
    else:
        with image.pixels_once() as pixels:
            data = encode_pixels(pixels, "JPEG", OFFICIAL_JPEG_QUALITY)
        if store is not None:
            store.set_bytes(key, data)
    image.release()
    return EncodedImage(data, "image/jpeg", hashlib.sha256(data).hexdigest(), *image.size)


def _opencv_version() -> str:
    import cv2

    return str(cv2.__version__)


@dataclass(frozen=True)
class EncodedImage:
    """An image encoded once, with its content hash for cache keys and traces.

    Its data URI is built on first use and kept, so every request that shows the image
    reuses one string.
    """

    data: bytes = field(repr=False)
    mime: str
    sha256: str
    width: int
    height: int
    #: The file these exact bytes were read from, when the image is sent unchanged.
    source: str | None = None

    @classmethod
    def from_pil(
        cls, image: Image.Image, fmt: str = "PNG", *, encoding: ImageEncoding = "original"
    ) -> EncodedImage:
        """Encode the pixels of a PIL image for the judge: JPEG at quality 75 under
        ``encoding="jpeg75"``; else as ``fmt`` (PNG lossless, JPEG at quality 95). A loaded
        file is sent as it is by :func:`encode_image`."""
        if encoding == "jpeg75":
            data, mime = encode_pixels(image, "JPEG", OFFICIAL_JPEG_QUALITY), "image/jpeg"
        elif fmt.upper() == "JPEG":
            data, mime = encode_pixels(image, "JPEG", ORIGINAL_JPEG_QUALITY), "image/jpeg"
        else:
            data, mime = encode_pixels(image, "PNG"), "image/png"
        return cls(data, mime, hashlib.sha256(data).hexdigest(), image.width, image.height)

    @cached_property
    def _data_uri(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def data_uri(self) -> str:
        """The image as a ``data:`` URI, the form OpenAI-compatible servers accept (built
        once per encoded image)."""
        return self._data_uri

    @cached_property
    def data_uri_json(self) -> bytes:
        """:meth:`data_uri` as a JSON string (quotes included), as bytes: what a request body
        holds, built once per encoded image and shared by every request that shows it."""
        encoded = base64.b64encode(self.data)
        return b"".join((b'"data:', self.mime.encode("ascii"), b";base64,", encoded, b'"'))

    def to_pil(self) -> Image.Image:
        """Decode back to a PIL image."""
        with Image.open(io.BytesIO(self.data)) as img:
            return img.convert("RGB")
