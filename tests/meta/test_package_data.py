"""The human ratings shipped in the package: complete, unchanged, loaded as documented."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from cigeval.meta import load_human_ratings, load_rater_ratings
from cigeval.tasks.ids import IMAGENHUB_TASK_NAMES


def _shipped() -> list[Path]:
    root = Path(str(resources.files("cigeval.data").joinpath("imagenhub_human_ratings")))
    return sorted(root.glob("ImagenHub_*/*.tsv"))


def test_21_files_and_attribution() -> None:
    files = _shipped()
    assert len(files) == 21
    readme = Path(
        str(resources.files("cigeval.data").joinpath("imagenhub_human_ratings", "README.md"))
    )
    text = readme.read_text(encoding="utf-8")
    assert "Max W.F. Ku" in text and "2cbea4e8ce5721425a8772590ecdbe7d2edd1721" in text


def test_files_identical_to_shared_copy(shared: Path) -> None:
    source = shared / "data" / "imagenhub_human_ratings"
    for path in _shipped():
        original = source / path.parent.name / path.name
        assert path.read_bytes() == original.read_bytes(), path.name


def test_counts_and_definitions() -> None:
    human = load_human_ratings()
    assert len(human) == 4801
    assert len(load_human_ratings(all_models=True)) == 4801 + 179 + 150
    assert len(load_rater_ratings()) == 3 * 4801
    assert set(human.index.get_level_values("task")) == set(IMAGENHUB_TASK_NAMES)
    raters = load_rater_ratings(tasks=["multi_concept_ic"])
    one = raters[raters["uid"] == raters["uid"].iloc[0]]
    one = one[one["model"] == one["model"].iloc[0]]
    key = ("multi_concept_ic", one["model"].iloc[0], one["uid"].iloc[0])
    assert human.loc[key, "SC"] == pytest.approx(one["SC"].mean())
    assert human.loc[key, "O"] == pytest.approx(np.sqrt(one["SC"] * one["PQ"]).mean())
    assert human[["SC", "PQ", "O"]].stack().between(0, 1).all()
