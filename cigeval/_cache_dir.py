"""Where cigeval caches things (replies, thumbnails), in a module light enough for a report."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """Per-user cache directory: ``$CIGEVAL_CACHE_DIR`` or ``$XDG_CACHE_HOME/cigeval``."""
    if os.environ.get("CIGEVAL_CACHE_DIR"):
        return Path(os.environ["CIGEVAL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cigeval"
