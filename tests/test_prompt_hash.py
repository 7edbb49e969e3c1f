"""The templates hash: listed at most once a second, and an edited template still counts."""

from __future__ import annotations

from pathlib import Path

import pytest

import cigeval.prompts as prompts
from cigeval.prompts import templates_sha256


def test_the_folders_are_listed_once_per_interval_and_edits_are_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plan.j2").write_text("first")
    clock = [1000.0]
    monkeypatch.setattr(prompts.time, "monotonic", lambda: clock[0])
    listings: list[Path] = []
    glob = Path.glob

    def counted(self: Path, pattern: str):  # type: ignore[no-untyped-def]
        listings.append(self)
        return glob(self, pattern)

    monkeypatch.setattr(Path, "glob", counted)
    first = templates_sha256(tmp_path)
    assert templates_sha256(tmp_path) == first
    assert len(listings) == 2  # the built-in folder and the variant's, once
    (tmp_path / "plan.j2").write_text("second, longer")
    assert templates_sha256(tmp_path) == first  # within the interval: not looked at
    clock[0] += prompts.SIGNATURE_TTL_S
    edited = templates_sha256(tmp_path)
    assert edited != first and len(listings) == 4
    assert edited != templates_sha256() and templates_sha256(tmp_path) == edited
