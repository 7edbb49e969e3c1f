"""The noise-robust Difference (``DifferenceConfig(robust=True)``, ``--diff-robust``): it finds
planted edits under an editor's noise where the plain Difference marks everything, and says
when the whole image changed."""

from __future__ import annotations

import builtins
import io
from typing import Any

import numpy as np
import pytest
from PIL import Image

from cigeval.cli import build_parser
from cigeval.cli._flags import build_config
from cigeval.config import DifferenceConfig, EvalConfig
from cigeval.errors import MissingDependency
from cigeval.planted_edits import PlantedPair, planted_pair
from cigeval.planted_edits.layout import random_scene
from cigeval.planted_edits.noise import EditorNoise
from cigeval.planted_edits.scene import render
from cigeval.planted_edits.scoring import difference_locator, score_locator
from cigeval.tools import DifferenceTool, compare_images
from cigeval.tools._robust_difference import small_shift

from .conftest import MakeCtx

pytest.importorskip("skimage")

SIZE = 192
ROBUST = DifferenceConfig(robust=True)


@pytest.fixture(scope="module")
def pairs() -> list[PlantedPair]:
    """Pairs of the planted-edit set of seed 10 at SIZE (the first seed whose first twelve
    pairs hold three failed edits, re-rendered and unedited, and an over-edited pair)."""
    return [planted_pair(10, index, size=SIZE) for index in range(12)]


def _scene(seed: int) -> np.ndarray:
    return render(random_scene(np.random.default_rng(seed), SIZE))


def _noise(**changes: Any) -> EditorNoise:
    base = EditorNoise(
        shift=(2.4, -1.6),
        detail="blur",
        detail_amount=0.8,
        gamma=1.08,
        contrast=0.94,
        brightness=6.0,
        white_balance=(1.04, 0.97, 0.95),
        noise_sigma=2.5,
        jpeg_quality=72,
        seed=3,
    )
    return EditorNoise(**{**base.__dict__, **changes})


def test_the_set_holds_what_the_comparison_needs(pairs: list[PlantedPair]) -> None:
    kinds = [pair.kind for pair in pairs]
    assert kinds.count("failed") >= 2 and "over_edit" in kinds
    assert len({e.kind for p in pairs for e in p.edits}) >= 4


def test_robust_beats_the_plain_difference_on_planted_edits(pairs: list[PlantedPair]) -> None:
    plain = score_locator(pairs, difference_locator(DifferenceConfig()))
    robust = score_locator(pairs, difference_locator(ROBUST))
    # the plain difference marks every re-rendered picture as edited; the robust one none
    assert plain.unedited_marked == 1.0 and robust.unedited_marked == 0.0
    assert robust.edits_found >= 0.9 > plain.edits_found
    assert robust.over_editing.f1 > plain.over_editing.f1
    assert robust.failed_edits.f1 == 1.0 > plain.failed_edits.f1


def test_a_re_rendered_picture_has_no_change() -> None:
    clean = _scene(1)
    noisy = Image.open(io.BytesIO(_noise().apply(clean)))
    assert compare_images(Image.fromarray(clean), noisy, config=DifferenceConfig()).regions
    report = compare_images(Image.fromarray(clean), noisy, config=ROBUST)
    assert report.regions == [] and not report.whole_image_changed
    assert report.shift == pytest.approx((2.4, -1.6), abs=0.3)


def test_the_shift_is_found_to_a_fraction_of_a_pixel_among_small_ones() -> None:
    gray = _scene(2)[..., 1].astype(np.float32)
    moved = _noise(detail="none", noise_sigma=0.0).degrade(np.dstack([gray] * 3).astype(np.uint8))
    dx, dy = small_shift(gray, moved[..., 1].astype(np.float32), reach=4)
    assert (dx, dy) == pytest.approx((2.4, -1.6), abs=0.25)


def test_boxes_on_the_second_image_follow_its_shift(pairs: list[PlantedPair]) -> None:
    pair = next(p for p in pairs if p.kind == "edit" and len(p.edits) == 1)
    report = compare_images(pair.source, pair.edited, config=ROBUST)
    (dx, dy), box = report.shift, report.regions[0]
    moved = report.in_b(box)
    assert (moved.x0, moved.y0) == pytest.approx((box.x0 + dx, box.y0 + dy))


def test_another_picture_altogether_is_the_whole_image() -> None:
    report = compare_images(Image.fromarray(_scene(3)), Image.fromarray(_scene(4)), config=ROBUST)
    assert report.whole_image_changed
    assert [b.as_list() for b in report.regions] == [[0, 0, SIZE, SIZE]]


async def test_the_tool_says_so(make_ctx: MakeCtx, pairs: list[PlantedPair]) -> None:
    config = EvalConfig(method="extended", difference=ROBUST)
    images = {"source": Image.fromarray(_scene(3)), "output": Image.fromarray(_scene(4))}
    ctx = make_ctx("text_guided_ie", "edit_success", images, instruction="x", config=config)
    result = await DifferenceTool().run(ctx)
    assert "the whole image changed" in result.text
    assert result.data["whole_image_changed"] is True and len(result.data["shift"]) == 2
    pair = next(p for p in pairs if p.kind == "failed")
    images = {"source": pair.source, "output": pair.edited}
    ctx = make_ctx("text_guided_ie", "edit_success", images, instruction="x", config=config)
    result = await DifferenceTool().run(ctx)
    assert "no meaningful change found" in result.text and "own noise" in result.text


def test_the_flag_reaches_the_config() -> None:
    command = ["evaluate", "s.jsonl", "--model", "openai:m", "--out", "r.jsonl"]
    args = build_parser().parse_args([*command, "--diff-robust"])
    assert build_config(args, EvalConfig).difference.robust is True
    args = build_parser().parse_args(command)
    assert build_config(args, EvalConfig).difference.robust is False
    # the paper's Difference stays the paper's
    assert EvalConfig().difference.robust is False
    assert EvalConfig(method="extended").difference.robust is False


def test_without_scikit_image_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("skimage"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)
    clean = Image.fromarray(_scene(5))
    with pytest.raises(MissingDependency, match=r"cigeval\[robust\]"):
        compare_images(clean, clean, config=ROBUST)
