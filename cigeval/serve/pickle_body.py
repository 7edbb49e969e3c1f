"""The trainers' pickle bodies, read through a restricted unpickler.

Flow-GRPO's ``unifiedreward_score_remote`` posts ``pickle.dumps({"images": [JPEG bytes, ...],
"prompts": <numpy string array from np.array_split>})`` and reads back a pickled
``{"outputs": [float, ...]}``; EditScore's ``RewardClient`` posts PIL images
(:mod:`cigeval.serve.pickle_routes`). A pickle can name any importable callable, so this
unpickler loads plain containers, bytes, strings and numbers; of numpy only the three globals
that rebuild a string array (``_reconstruct``, ``ndarray``, ``dtype``), each checked; of
Pillow only its image classes, rebuilt from their pickled state by a stand-in that checks the
mode, the size (``max_pixels``) and the length of the pixel data before any memory is taken
for them; and ``_codecs.encode`` with latin-1 (how protocol 2 writes bytes). Every other
global (``os.system``, ``builtins.eval``, ...) is refused before anything runs.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from cigeval.serve.inputs import over_pixel_limit

#: The modules numpy 1.x and 2.x name ``_reconstruct`` from.
_MULTIARRAY = ("numpy.core.multiarray", "numpy._core.multiarray")
#: Bytes per pixel of the image modes a pickled PIL image may have ("1": bits, see below).
_MODE_BYTES = {
    "L": 1, "P": 1, "LA": 2, "PA": 2, "La": 2, "I;16": 2, "RGB": 3, "YCbCr": 3, "LAB": 3,
    "HSV": 3, "RGBA": 4, "RGBa": 4, "RGBX": 4, "CMYK": 4, "I": 4, "F": 4,
}  # fmt: skip


class UnsafePickle(ValueError):
    """The body is not a pickle this server loads (a refused global, or not a pickle)."""


class PickledImage:
    """A PIL image as unpickled: :attr:`image` once its state checked out, else
    :attr:`problem` says why not (that item's error; the rest of the body loads)."""

    max_pixels = 0  # set on the subclass each unpickler makes

    def __init__(self) -> None:
        self.image: Any = None
        self.problem: str | None = "no image state in the pickle"

    def __setstate__(self, state: Any) -> None:
        self.image, self.problem = None, None
        try:
            self.image = _image_from_state(state, self.max_pixels)
        except Exception as exc:
            self.problem = f"pickled PIL image refused: {exc}"


def _image_from_state(state: Any, max_pixels: int) -> Any:
    from PIL import Image

    if not isinstance(state, list | tuple) or len(state) < 5:
        raise ValueError("not the state Pillow pickles (info, mode, size, palette, data)")
    info, mode, size, palette, data = state[:5]
    if mode != "1" and mode not in _MODE_BYTES:
        raise ValueError(f"image mode {mode!r} is not accepted")
    if (
        not isinstance(size, list | tuple)
        or len(size) != 2
        or not all(isinstance(v, int) and v > 0 for v in size)
    ):
        raise ValueError(f"image size {size!r} is not two positive integers")
    width, height = size
    if width * height > max_pixels:
        raise ValueError(over_pixel_limit(width, height, max_pixels))
    row = -(-width // 8) if mode == "1" else width * _MODE_BYTES[mode]
    if not isinstance(data, bytes) or len(data) != row * height:
        raise ValueError(f"pixel data of a {mode} {width}x{height} image has the wrong length")
    image = Image.frombytes(mode, (width, height), data)
    if palette and mode in ("P", "PA"):
        image.putpalette(list(palette))
    if isinstance(info, dict):
        image.info.update(info)
    return image


def _string_dtype(spec: Any, align: Any = False, copy: Any = False) -> Any:
    import numpy as np

    if not isinstance(spec, str) or spec[:1] not in ("U", "S") or not spec[1:].isdigit():
        raise UnsafePickle(f"refused numpy dtype {spec!r}: only string arrays are accepted")
    return np.dtype(spec)


def _reconstruct(subtype: Any, shape: Any, dtype_code: Any) -> Any:
    import numpy as np

    if subtype is not np.ndarray or dtype_code != b"b":
        raise UnsafePickle("refused numpy array reconstruction: only plain ndarrays")
    return np.ndarray.__new__(np.ndarray, shape, dtype_code)


def _latin1(text: Any, encoding: Any = "utf-8") -> bytes:
    if not isinstance(text, str) or encoding != "latin1":
        raise UnsafePickle("refused _codecs.encode: only latin-1 text, as pickled bytes are")
    return text.encode("latin1")


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, body: bytes, max_pixels: int) -> None:
        super().__init__(io.BytesIO(body))
        self.image_class = type("PickledImage", (PickledImage,), {"max_pixels": max_pixels})

    def find_class(self, module: str, name: str) -> Any:
        import numpy as np

        if module in _MULTIARRAY and name == "_reconstruct":
            return _reconstruct
        if module == "numpy" and name == "ndarray":
            return np.ndarray
        if module == "numpy" and name == "dtype":
            return _string_dtype
        if module == "_codecs" and name == "encode":
            return _latin1
        if module == "PIL.Image" and name == "Image":
            return self.image_class
        if module.startswith("PIL.") and module.endswith("ImagePlugin") and name.endswith("File"):
            return self.image_class  # JpegImageFile, PngImageFile, ...: the pixels only
        raise UnsafePickle(f"refused global {module}.{name}: this server loads data only")


def load_pickle(body: bytes, max_pixels: int) -> Any:
    """The data of a pickled body, or UnsafePickle (a refused global, not a pickle)."""
    try:
        return _RestrictedUnpickler(body, max_pixels).load()
    except UnsafePickle:
        raise
    except Exception as exc:
        raise UnsafePickle(f"not a readable pickle ({type(exc).__name__})") from None


def strings(value: Any, what: str) -> list[str]:
    """A 1-d numpy string array or a list of strings, as a list of str (else UnsafePickle)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.kind not in ("U", "S") or value.ndim != 1:
            raise UnsafePickle(f"{what!r} must be a 1-d string array or a list of strings")
        value = value.tolist()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str | bytes) for v in value):
        raise UnsafePickle(f"{what!r} must be a 1-d string array or a list of strings")
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]


def load_flow_grpo_body(body: bytes | Any) -> tuple[list[Any], list[str]]:
    """The images and prompts of a Flow-GRPO body (bytes, or a pickle already loaded);
    UnsafePickle when refused or malformed. An image that is not bytes stays in the list
    (it becomes that item's error)."""
    data = load_pickle(body, 0) if isinstance(body, bytes) else body
    if not isinstance(data, dict) or "images" not in data or "prompts" not in data:
        raise UnsafePickle("the pickle must be a dict with 'images' and 'prompts'")
    images = data["images"]
    if not isinstance(images, list | tuple):
        raise UnsafePickle("'images' must be a list of image file bytes (JPEG, PNG)")
    prompts = strings(data["prompts"], "prompts")
    if len(prompts) != len(images):
        raise UnsafePickle(f"{len(images)} image(s) but {len(prompts)} prompt(s)")
    return list(images), prompts


def dump_answer(answer: dict[str, Any]) -> bytes:
    """A pickled answer (plain containers, floats and strings only)."""
    return pickle.dumps(answer, protocol=4)
