"""A hub model that is neither cached nor reachable fails at once, not after minutes of retries."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cigeval._hub import ensure_loadable
from cigeval.errors import ConfigError


def test_an_uncached_hub_id_without_network_fails_in_seconds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty local cache
    for variable in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    started = time.monotonic()
    with pytest.raises(ConfigError, match="not in the local Hugging Face cache") as info:
        ensure_loadable("some-org/no-such-model", "the GroundingDINO checkpoint")
    assert time.monotonic() - started < 10
    assert "Pass a local folder" in str(info.value)


def test_local_folders_and_offline_mode_are_left_to_transformers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ensure_loadable(str(tmp_path), "a model")  # an existing folder: no check
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ensure_loadable("some-org/no-such-model", "a model")  # transformers fails fast itself


def test_an_hf_judge_that_is_neither_cached_nor_reachable_fails_in_seconds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from cigeval.backends import HFBackend

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    started = time.monotonic()
    with pytest.raises(ConfigError, match="not in the local Hugging Face cache"):
        HFBackend("some-org/no-such-judge", device="cpu").load()
    assert time.monotonic() - started < 30  # importing torch and transformers included
