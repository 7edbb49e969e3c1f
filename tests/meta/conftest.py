"""Fixtures for the meta-evaluation tests: the shared data folder and the reference numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

_HERE = Path(__file__).resolve()


def _find_shared() -> Path | None:
    # CI clones the repository with shared/ inside or beside the checkout; a developer checkout
    # may point elsewhere with CIGEVAL_SHARED.
    candidates = [_HERE.parents[2] / "shared", _HERE.parents[3] / "shared"]
    if os.environ.get("CIGEVAL_SHARED"):
        candidates.insert(0, Path(os.environ["CIGEVAL_SHARED"]))
    for candidate in candidates:
        if (candidate / "data" / "viescore_outputs" / "scores").is_dir():
            return candidate
    return None


SHARED = _find_shared()


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared data folder (skips the test when it is absent)."""
    if SHARED is None:
        pytest.skip("shared data folder not found (looked for shared/ in and beside the repo)")
    return SHARED


@pytest.fixture(scope="session")
def scores_dir(shared: Path) -> Path:
    """Folder of the recorded VIEScore score tables."""
    return shared / "data" / "viescore_outputs" / "scores"


@pytest.fixture(scope="session")
def reference(shared: Path) -> dict[str, Any]:
    """reference_numbers.json, the test oracle."""
    path = shared / "data" / "meta_eval_reference" / "reference_numbers.json"
    return json.loads(path.read_text(encoding="utf-8"))
