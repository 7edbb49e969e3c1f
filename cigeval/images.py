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
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, Any, Literal, Protocol, cast, runtime_checkable

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from cigeval._file_bytes import FileChangedError, ReloadableFileBytes
from cigeval._image_bytes import jpeg_is_whole, png_is_plain
from cigeval.errors import InputError

#: Images above this many pixels are refused (decompression-bomb guard). 8192 x 8192.
MAX_PIXELS = 8192 * 8192
#: Image files above this many bytes are refused before they are read (512 MiB: more than an
#: uncompressed 16-bit RGBA image of MAX_PIXELS needs).
MAX_FILE_BYTES = 512 * 1024 * 1024


def load_image(
    image: str | Path | Image.Image | bytes,
    *,
    role: str,
    sample_id: str | None = None,
    base_dir: Path | None = None,
    max_pixels: int = MAX_PIXELS,
    max_bytes: int = MAX_FILE_BYTES,
    mask: bool = False,
) -> Image.Image:
    """Open ``image`` as an 8-bit RGB PIL image, or raise :class:`InputError` naming the problem.

    ``image`` is a path, a PIL image, or the bytes of an image file (as a Hugging Face
    dataset stores them). Handles EXIF rotation, palette, alpha (composited on white), 16-bit
    and float modes. A file is checked before it is read whole: its size (at most
    ``max_bytes``), then its header (an image format Pillow reads, at most ``max_pixels``
    pixels). An RGB PNG or JPEG file, or such bytes, keeps its bytes to be sent unchanged.
    ``mask=True`` reads an edit mask instead: see :func:`mask_to_rgb` for its alpha channel.
    """
    convert = mask_to_rgb if mask else to_rgb
    if isinstance(image, Image.Image):
        return _check_size(convert(image), role, sample_id, max_pixels)
    if isinstance(image, bytes | bytearray):
        data = bytes(image)
        where = f"({len(data)} bytes given in memory)"
        if not data:
            raise InputError(f"{role} image is empty (zero bytes given)", sample_id)
        if len(data) > max_bytes:
            message = f"{role} image is too large {where}, limit {max_bytes} bytes"
            raise InputError(message, sample_id)
        return _decode(data, where, None, role, sample_id, max_pixels, convert)
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
                _check_header(header.size, role, sample_id, max_pixels, str(path))
            data = path.read_bytes()
    except InputError:
        raise
    except Exception as exc:
        raise _refused(exc, role, str(path), sample_id) from None
    return _decode(data, str(path), str(path.resolve()), role, sample_id, max_pixels, convert)


def _decode(
    data: bytes,
    where: str,
    source: str | None,
    role: str,
    sample_id: str | None,
    max_pixels: int,
    convert: Callable[[Image.Image], Image.Image],
) -> Image.Image:
    """The image in the bytes of an image file (``source``: the file they were read from).

    A whole RGB PNG or JPEG file without an EXIF rotation is returned undecoded: Pillow
    decodes its pixels on first use (see :func:`_decode_on_first_use`), reading them from
    a file's bytes that may be let go meanwhile and read again (:func:`release_file_bytes`).
    Any other image is decoded, EXIF-transposed and converted now.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            held = ReloadableFileBytes(source, data) if source is not None else None
            opened = Image.open(cast(IO[bytes], held) if held is not None else io.BytesIO(data))
            _check_header(opened.size, role, sample_id, max_pixels, where)
            mime = _PASSTHROUGH_MIME.get(opened.format or "")
            if mime is not None and opened.mode == "RGB" and _plain_file(data, opened):
                bytes_of = held.data if held is not None else lambda: data
                _decode_on_first_use(opened, bytes_of, held, role, where, sample_id)
                _keep_file_bytes(opened, bytes_of, mime, source, held)
                return opened
            with opened:
                opened.load()
                original_mode = opened.mode
                rotated = opened.getexif().get(_EXIF_ORIENTATION, 1) != 1
                loaded = ImageOps.exif_transpose(opened)
    except InputError:
        raise
    except Exception as exc:
        raise _refused(exc, role, where, sample_id) from None
    rgb = convert(loaded)
    if mime is not None and original_mode == "RGB" and not rotated:
        _keep_file_bytes(rgb, lambda: data, mime, source, None)
    return rgb


def _plain_file(data: bytes, opened: Image.Image) -> bool:
    """Whether the file is whole and holds no EXIF rotation, told without decoding pixels."""
    if opened.format == "PNG":
        return png_is_plain(data)
    whole = jpeg_is_whole(data)  # a JPEG's EXIF block is read with its header
    return whole and opened.getexif().get(_EXIF_ORIENTATION, 1) == 1


def _decode_on_first_use(
    image: Image.Image,
    bytes_of: Callable[[], bytes],
    held: ReloadableFileBytes | None,
    role: str,
    where: str,
    sample_id: str | None,
) -> None:
    """Make ``image`` (opened from the bytes ``bytes_of`` gives, not yet decoded) decode its
    pixels once, on first use, safely from several threads, and report a damaged file (or
    one changed on disk since) as the InputError :func:`load_image` would have raised. A
    decoded copy that leaves ``image`` undecoded is available too (:func:`decoded_pixels`)."""
    decode = image.load
    lock = threading.Lock()

    def load() -> Any:
        with lock:
            try:
                return decode()
            except Exception as exc:
                raise _refused(exc, role, where, sample_id) from None
            finally:
                if held is not None and held.released_once:
                    held.release()  # the pixels are decoded: the bytes are not needed now

    def decoded_copy() -> Image.Image:
        try:
            copy = Image.open(io.BytesIO(bytes_of()))
            copy.load()
        except Exception as exc:
            raise _refused(exc, role, where, sample_id) from None
        return copy

    image.load = load  # type: ignore[method-assign]
    setattr(image, _DECODED_COPY, decoded_copy)


@contextmanager
def decoded_pixels(image: Image.Image) -> Iterator[Image.Image]:
    """``image`` with its pixels decoded, for one use that keeps nothing of them (an encoding).

    An image :func:`load_image` opened without decoding stays undecoded: the pixels are those
    of a copy decoded from the same file bytes and freed on exit. A sample waiting for its
    judge then holds its files' bytes and their encodings, not their pixels (a tool that
    needs the pixels decodes them then). Any other image is given as it is.
    """
    copy = getattr(image, _DECODED_COPY, None)
    if copy is None or not getattr(image, "tile", None):  # decoded already: Pillow empties tile
        yield image
        return
    decoded = copy()
    try:
        yield decoded
    finally:
        decoded.close()


def _keep_file_bytes(
    image: Image.Image,
    bytes_of: Callable[[], bytes],
    mime: str,
    source: str | None,
    held: ReloadableFileBytes | None,
) -> None:
    """Keep the file's bytes (``bytes_of`` gives them; ``held``, when they can be let go)
    with ``image``, which already is what a model accepts, to send them instead of
    re-encoding. A copy keeps ``info`` but not the owner token set on the image itself, so
    an edited copy is never sent as the original file."""
    owner = object()
    image.info[RAW_BYTES_KEY] = _KeptFile(bytes_of, mime, owner, source, held)
    setattr(image, _RAW_OWNER, owner)


@dataclass(frozen=True)
class _KeptFile:
    """The file :func:`load_image` keeps with an image it can send unchanged."""

    bytes_of: Callable[[], bytes]
    mime: str
    owner: object
    source: str | None
    #: The bytes when they can be let go and read again (a file on disk), else None.
    reloadable: ReloadableFileBytes | None


def _kept_file(image: Image.Image) -> _KeptFile | None:
    """The file kept with ``image`` itself (not with an edited copy of it), or None."""
    kept = image.info.get(RAW_BYTES_KEY)
    if not isinstance(kept, _KeptFile) or kept.owner is not getattr(image, _RAW_OWNER, None):
        return None
    return kept


def raw_file_bytes(image: Image.Image) -> tuple[bytes, str, str | None] | None:
    """The (bytes, mime, source file or None) kept with ``image`` by :func:`load_image` when
    it can be sent unchanged, else None."""
    kept = _kept_file(image)
    return None if kept is None else (kept.bytes_of(), kept.mime, kept.source)


def file_sha256(image: Image.Image) -> str | None:
    """The sha256 (hex) of the bytes of the file ``image`` was read from by
    :func:`load_image` (without reading them again when they were let go), or None for an
    image that is not such a file."""
    kept = _kept_file(image)
    if kept is None:
        return None
    if kept.reloadable is not None:
        return kept.reloadable.sha256()
    return hashlib.sha256(kept.bytes_of()).hexdigest()


def release_file_bytes(image: Image.Image, sha256: str | None = None) -> None:
    """Let the bytes of the file ``image`` was read from go until they are needed again
    (its pixels decoded, or the file sent as it is): they are then read from the file again
    and checked against ``sha256``, the hex digest of the bytes first read (computed when
    not given). Nothing happens to an image not read from a file by :func:`load_image`."""
    kept = _kept_file(image)
    if kept is not None and kept.reloadable is not None:
        kept.reloadable.release(sha256)


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


#: Key in ``Image.info`` holding the file (a ``_KeptFile``) of an image that can be sent
#: unchanged (read it with :func:`raw_file_bytes`).
RAW_BYTES_KEY = "cigeval_raw_bytes"
_RAW_OWNER = "_cigeval_raw_owner"
_DECODED_COPY = "_cigeval_decoded_copy"
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
    JPEG bytes, encoded with OpenCV.

    JPEG bytes are those Pillow writes at the same ``quality`` (baseline, 4:2:0, no Huffman
    optimisation); PNG is lossless (one filter per row, fast Huffman-only compression).
    """
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
    image: Image.Image,
    fmt: str = "PNG",
    *,
    encoding: ImageEncoding = "original",
    cache: object | None = None,
) -> EncodedImage:
    """:meth:`EncodedImage.from_pil`, remembered across runs for image files.

    With ``encoding="jpeg75"`` every image is decoded and encoded again, the costliest part
    of judging a sample whose answers are cached. When ``cache`` can hold bytes
    (:class:`BytesCache`) and ``image`` was read from a file by :func:`load_image`, the
    encoding is stored under the sha256 of the file's bytes and the encoder's version, and
    found there the next time the same file is judged (any judge, any settings): the pixels
    are then never decoded. The bytes are those the encoder would make again.

    Once such a file is encoded as JPEG its bytes are let go (:func:`release_file_bytes`):
    a sample waiting for its judge holds what the judge is sent, and a tool that later needs
    the pixels reads the file again, refused if it changed meanwhile.
    """
    digest = file_sha256(image) if encoding == "jpeg75" else None
    if digest is None:
        return EncodedImage.from_pil(image, fmt, encoding=encoding)
    encoded = _remembered_jpeg(image, fmt, digest, cache)
    release_file_bytes(image, digest)
    return encoded


def _remembered_jpeg(
    image: Image.Image, fmt: str, file_sha256: str, cache: object | None
) -> EncodedImage:
    """The jpeg75 encoding of ``image`` (read from a file of that sha256), from ``cache`` when
    it holds it, else made (and stored there)."""
    if not isinstance(cache, BytesCache):
        return EncodedImage.from_pil(image, fmt, encoding="jpeg75")
    key = f"image|jpeg75|opencv-{_opencv_version()}|{file_sha256}"
    data = cache.get_bytes(key)
    if data is None:
        encoded = EncodedImage.from_pil(image, fmt, encoding="jpeg75")
        cache.set_bytes(key, encoded.data)
        return encoded
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
        """Encode a PIL image for the judge.

        ``encoding="jpeg75"``: JPEG at quality 75 of the image's RGB pixels, whatever it was
        read from (images from :func:`load_image` are already EXIF-transposed).
        ``encoding="original"``: an RGB PNG or JPEG file opened by :func:`load_image` keeps
        its original bytes, sent unchanged (no re-encoding, no generation loss); any other
        image is encoded as ``fmt`` (PNG lossless, JPEG at quality 95).
        """
        if encoding == "jpeg75":
            with decoded_pixels(image) as pixels:
                data = encode_pixels(pixels, "JPEG", OFFICIAL_JPEG_QUALITY)
            return cls(data, "image/jpeg", hashlib.sha256(data).hexdigest(), *image.size)
        raw = raw_file_bytes(image)
        if raw is not None:
            data, mime, source = raw
            digest = hashlib.sha256(data).hexdigest()
            return cls(data, mime, digest, image.width, image.height, source)
        if fmt.upper() == "JPEG":
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
