"""Backend test setup: the fake Anthropic server fixture and a clean OpenAI environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The fake Anthropic server lives in tests/anthropic_server.py for reuse by other test folders.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.anthropic_server import anthropic_server  # noqa: E402, F401


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's OpenAI settings must not leak into tests (nor tests reach OpenAI)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
