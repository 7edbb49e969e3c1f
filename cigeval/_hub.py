"""A fast answer to "can this Hugging Face model be loaded here?" before transformers tries.

Without it, a hub id that is not in the local cache on a machine without network costs minutes
of the hub client's retries per file before transformers gives up.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

from cigeval.errors import ConfigError

_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _in_local_cache(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # an id the cache cannot even look up: let transformers explain it
        return True


def ensure_loadable(name: str, what: str, *, timeout_s: float = 5.0) -> None:
    """Raise ConfigError at once when ``name`` is a hub id that is neither cached nor reachable.

    Local folders, ids already in the local cache, offline mode (``HF_HUB_OFFLINE``, where
    transformers fails fast by itself) and proxied networks (where a direct connection proves
    nothing) are left to transformers.
    """
    if Path(name).expanduser().exists() or _truthy(os.environ.get("HF_HUB_OFFLINE")):
        return
    if any(os.environ.get(v) for v in _PROXY_VARIABLES) or _in_local_cache(name):
        return
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigError(
            f"{what} {name!r} is not in the local Hugging Face cache and the hub ({endpoint}) "
            f"cannot be reached ({exc}). Pass a local folder holding the weights (one written by "
            "save_pretrained or `huggingface-cli download`), or run where the hub is reachable."
        ) from None
