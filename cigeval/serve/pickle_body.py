"""Flow-GRPO's remote-scorer body, read through a restricted unpickler.

Flow-GRPO's ``unifiedreward_score_remote`` posts ``pickle.dumps({"images": [JPEG bytes, ...],
"prompts": <numpy string array from np.array_split>})`` and reads back a pickled
``{"outputs": [float, ...]}``. A pickle can name any importable callable, so this unpickler
loads plain containers, bytes, strings and numbers, and of numpy only the three globals that
rebuild a string array (``_reconstruct``, ``ndarray``, ``dtype``), each checked: every other
global (``os.system``, ``builtins.eval``, ...) is refused before anything runs.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

#: The modules numpy 1.x and 2.x name ``_reconstruct`` from.
_MULTIARRAY = ("numpy.core.multiarray", "numpy._core.multiarray")


class UnsafePickle(ValueError):
    """The body is not a pickle this server loads (a refused global, or not a pickle)."""


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


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        import numpy as np

        if module in _MULTIARRAY and name == "_reconstruct":
            return _reconstruct
        if module == "numpy" and name == "ndarray":
            return np.ndarray
        if module == "numpy" and name == "dtype":
            return _string_dtype
        raise UnsafePickle(f"refused global {module}.{name}: this server loads data only")


def _strings(value: Any) -> list[str]:
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.kind not in ("U", "S") or value.ndim != 1:
            raise UnsafePickle("'prompts' must be a 1-d string array or a list of strings")
        value = value.tolist()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str | bytes) for v in value):
        raise UnsafePickle("'prompts' must be a 1-d string array or a list of strings")
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]


def load_flow_grpo_body(body: bytes) -> tuple[list[bytes], list[str]]:
    """The images and prompts of a Flow-GRPO body; UnsafePickle when refused or malformed."""
    try:
        data = _RestrictedUnpickler(io.BytesIO(body)).load()
    except UnsafePickle:
        raise
    except Exception as exc:
        raise UnsafePickle(f"not a readable pickle ({type(exc).__name__})") from None
    if not isinstance(data, dict) or "images" not in data or "prompts" not in data:
        raise UnsafePickle("the pickle must be a dict with 'images' and 'prompts'")
    images = data["images"]
    if not isinstance(images, list | tuple) or not all(isinstance(i, bytes) for i in images):
        raise UnsafePickle("'images' must be a list of image file bytes (JPEG, PNG)")
    prompts = _strings(data["prompts"])
    if len(prompts) != len(images):
        raise UnsafePickle(f"{len(images)} image(s) but {len(prompts)} prompt(s)")
    return list(images), prompts


def dump_outputs(scores: list[float], extra: dict[str, Any]) -> bytes:
    """The pickled answer Flow-GRPO reads: ``{"outputs": [...], **extra}``."""
    return pickle.dumps({"outputs": scores, **extra}, protocol=4)
