"""Fine-tuning test setup: offline, and a tiny random Qwen2.5-VL built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random Qwen2.5-VL (about 0.2 M parameters) with cigeval's chat template."""
    pytest.importorskip("transformers")
    from cigeval.training import save_random_qwen_vl

    return save_random_qwen_vl(tmp_path_factory.mktemp("tiny-qwen2.5-vl"))
