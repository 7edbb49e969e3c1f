"""Difference: changed regions of synthetic edits with known rectangles, and the tool."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
from PIL import Image

from cigeval.config import DifferenceConfig, EvalConfig
from cigeval.tools import Box, DifferenceTool, compare_images, find_changed_regions, merge_boxes
from cigeval.tools._format import fmt_box

from .conftest import MakeCtx

CONFIG = DifferenceConfig()
TOL = 3  # blur spreads a sharp edit by at most a couple of pixels


def _base(width: int = 128, height: int = 128) -> Image.Image:
    """A smooth image: resizing it changes almost nothing, unlike noise."""
    xs = np.linspace(0, 200, width)[None, :].repeat(height, 0)
    ys = np.linspace(20, 220, height)[:, None].repeat(width, 1)
    rgb = np.stack([xs, ys, np.full_like(xs, 128)], axis=2)
    return Image.fromarray(rgb.round().astype(np.uint8))


def _edit(image: Image.Image, *rects: tuple[int, int, int, int], colour=(250, 10, 10)):
    out = np.asarray(image).copy()
    for x0, y0, x1, y1 in rects:
        out[y0:y1, x0:x1] = colour
    return Image.fromarray(out)


def _close(box: Box, rect: tuple[float, float, float, float], tol: float = TOL) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(box.as_list(), rect, strict=True))


def _match(
    boxes: list[Box], rects: Sequence[tuple[float, float, float, float]], tol: float = TOL
) -> None:
    assert len(boxes) == len(rects), boxes
    for rect in rects:
        assert any(_close(b, rect, tol) for b in boxes), (rect, boxes)


def test_identical_images_have_no_regions() -> None:
    report = compare_images(_base(), _base(), config=CONFIG)
    assert report.regions == [] and report.changed_fraction == 0.0


def test_two_separate_edits_give_two_boxes() -> None:
    a = _base()
    b = _edit(a, (10, 10, 30, 25), (70, 60, 100, 90))
    boxes = find_changed_regions(a, b, config=CONFIG)
    _match(boxes, [(10, 10, 30, 25), (70, 60, 100, 90)])
    assert boxes[0].area >= boxes[1].area  # largest first
    assert all(b.label == "changed" for b in boxes)


def test_touching_edits_form_one_region() -> None:
    a = _base()
    b = _edit(a, (20, 20, 50, 50), (45, 45, 80, 70))
    _match(find_changed_regions(a, b, config=CONFIG), [(20, 20, 80, 70)])


def test_separate_component_inside_another_bounding_box_is_merged() -> None:
    # An L-shaped edit and a blob in the L's corner, too far apart to join by dilation:
    # two components whose boxes overlap, so one region.
    a = _base()
    b = _edit(a, (10, 10, 90, 16), (10, 10, 16, 90), (60, 60, 80, 80))
    _match(find_changed_regions(a, b, config=CONFIG), [(10, 10, 90, 90)])


def test_merge_boxes_is_transitive_through_merged_boxes() -> None:
    # A and B overlap; C overlaps neither, only their union. A single pass leaves two boxes.
    a, b, c = Box(0, 0, 10, 10), Box(8, 8, 20, 20), Box(15, 0, 25, 5)
    for order in ([a, b, c], [c, b, a], [b, c, a]):
        assert [m.as_list() for m in merge_boxes(order)] == [[0, 0, 25, 20]]


def test_merge_boxes_chain_and_separate() -> None:
    chain = [Box(i * 10, 0, i * 10 + 10, 5) for i in range(6)]  # each touches the next
    far = Box(200, 200, 210, 210)
    boxes = [*chain, far]
    random.Random(0).shuffle(boxes)
    merged = sorted(m.as_list() for m in merge_boxes(boxes))
    assert merged == [[0, 0, 60, 5], [200, 200, 210, 210]]
    assert merge_boxes([]) == []


def test_noise_below_threshold_is_ignored() -> None:
    a = _base()
    rng = np.random.default_rng(0)
    noisy = np.asarray(_edit(a, (40, 40, 70, 60))).astype(np.int16)
    noisy = noisy + rng.normal(0, 6, noisy.shape).round().astype(np.int16)
    b = Image.fromarray(noisy.clip(0, 255).astype(np.uint8))
    _match(find_changed_regions(a, b, config=CONFIG), [(40, 40, 70, 60)])
    only_noise = np.asarray(a).astype(np.int16) + rng.normal(0, 6, noisy.shape).round()
    b2 = Image.fromarray(only_noise.clip(0, 255).astype(np.uint8))
    assert find_changed_regions(a, b2, config=CONFIG) == []


def test_equal_luminance_colour_change_is_found() -> None:
    a = Image.new("RGB", (64, 64), (200, 50, 50))
    b = _edit(a, (16, 16, 48, 48), colour=(50, 118, 50))  # about the same grayscale value
    gray_a, gray_b = np.asarray(a.convert("L")), np.asarray(b.convert("L"))
    assert np.abs(gray_a.astype(int) - gray_b.astype(int)).max() < CONFIG.threshold
    _match(find_changed_regions(a, b, config=CONFIG), [(16, 16, 48, 48)])


def test_small_regions_dropped_and_count_capped() -> None:
    a = _base()
    b = _edit(a, (5, 5, 8, 8), (50, 50, 90, 90))
    assert len(find_changed_regions(a, b, config=CONFIG)) == 2
    strict = DifferenceConfig(min_area_fraction=0.01)
    _match(find_changed_regions(a, b, config=strict), [(50, 50, 90, 90)])
    sizes = [(2 + i * 25, 10, 2 + i * 25 + 6 + 3 * i, 30) for i in range(5)]
    many = _edit(a, *sizes)
    capped = find_changed_regions(a, many, config=DifferenceConfig(max_regions=3))
    _match(capped, sizes[2:])


def test_different_resolution_maps_boxes_to_each_image() -> None:
    a = _base(128, 128)
    edited = _edit(a, (20, 30, 60, 50))
    b = edited.resize((256, 192), Image.Resampling.BILINEAR)
    report = compare_images(a, b, config=CONFIG)
    _match(report.regions, [(20, 30, 60, 50)])
    _match(report.regions_b, [(40, 45, 120, 75)], tol=2 * TOL)
    assert report.scale == (2.0, 1.5)
    # The other way round: a larger first image, boxes in its own pixels.
    back = compare_images(b, a, config=CONFIG)
    _match(back.regions, [(40, 45, 120, 75)], tol=2 * TOL)
    _match(back.regions_b, [(20, 30, 60, 50)])


def _mask(rect: tuple[int, int, int, int], size: int = 128) -> np.ndarray:
    mask = np.zeros((size, size), bool)
    x0, y0, x1, y1 = rect
    mask[y0:y1, x0:x1] = True
    return mask


def test_mask_splits_inside_and_outside() -> None:
    a = _base()
    b = _edit(a, (35, 35, 60, 60), (90, 90, 110, 110))
    report = compare_images(a, b, config=CONFIG, mask=_mask((30, 30, 70, 70)))
    assert report.mask_box is not None and report.mask_box.as_list() == [30, 30, 70, 70]
    _match(report.inside_mask, [(35, 35, 60, 60)])
    _match(report.outside_mask, [(90, 90, 110, 110)])
    assert {b.label for b in report.inside_mask} == {"changed inside mask"}
    assert {b.label for b in report.outside_mask} == {"changed outside mask"}
    assert report.changed_fraction_outside_mask == pytest.approx(400 / 128**2, rel=0.3)


def test_edit_filling_the_mask_is_not_over_editing() -> None:
    a = _base()
    b = _edit(a, (30, 30, 70, 70))
    mask_image = Image.fromarray((_mask((30, 30, 70, 70)) * 255).astype(np.uint8)).convert("RGB")
    report = compare_images(a, b, config=CONFIG, mask=mask_image)
    _match(report.inside_mask, [(30, 30, 70, 70)])
    assert report.outside_mask == [] and report.changed_fraction_outside_mask == 0.0


def test_mask_of_other_resolution_is_resized() -> None:
    a = _base()
    b = _edit(a, (90, 10, 120, 40))
    report = compare_images(a, b, config=CONFIG, mask=_mask((10, 10, 30, 30), size=64))
    assert report.mask_box is not None and report.mask_box.as_list() == [20, 20, 60, 60]
    assert report.inside_mask == []
    _match(report.outside_mask, [(90, 10, 120, 40)])


async def test_tool_reports_and_highlights_both_images(make_ctx: MakeCtx) -> None:
    a = _base()
    b = _edit(a, (10, 10, 30, 25), (70, 60, 100, 90))
    ctx = make_ctx("text_guided_ie", "over_editing", {"source": a, "output": b}, instruction="x")
    result = await DifferenceTool().run(ctx)
    assert result.tool == "Difference" and result.highlighted
    assert "2 changed regions" in result.text
    assert set(result.images) == {"source", "output"}
    assert len(result.boxes["output"]) == 2
    out, src = np.asarray(result.images["output"]), np.asarray(b)
    assert np.array_equal(out[15, 15], src[15, 15])  # inside an edit
    assert np.array_equal(out[120, 5], src[120, 5] // 4)  # far from any edit
    assert result.data["roles"] == ["source", "output"]


async def test_tool_without_change_highlights_nothing(make_ctx: MakeCtx) -> None:
    a = _base()
    ctx = make_ctx("text_guided_ie", "edit_success", {"source": a, "output": a.copy()})
    result = await DifferenceTool().run(ctx)
    assert not result.highlighted and result.images == {} and result.boxes == {}
    assert "no meaningful change found" in result.text
    assert "highlighted" not in result.text.replace("Nothing is highlighted", "")


async def test_tool_with_one_image_explains(make_ctx: MakeCtx) -> None:
    ctx = make_ctx("text_guided_ig", "prompt_following", {"output": _base()}, prompt="a cat")
    result = await DifferenceTool().run(ctx)
    assert not result.highlighted and result.images == {}
    assert "needs two images" in result.text and "output" in result.text


async def test_tool_uses_the_task_mask(make_ctx: MakeCtx) -> None:
    a = _base()
    b = _edit(a, (35, 35, 60, 60), (90, 90, 110, 110))
    mask = Image.fromarray((_mask((30, 30, 70, 70)) * 255).astype(np.uint8)).convert("RGB")
    ctx = make_ctx(
        "mask_guided_ie",
        "over_editing",
        {"source": a, "mask": mask, "output": b},
        instruction="make it red",
    )
    result = await DifferenceTool().run(ctx)
    assert result.highlighted
    assert "OUTSIDE the mask" in result.text and "[30, 30, 70, 70]" in result.text
    labels = {box.label for box in result.boxes["output"]}
    assert labels == {"changed inside mask", "changed outside mask", "mask region"}
    assert "changed_fraction_outside_mask" in result.data


async def test_tool_reports_boxes_in_each_images_pixels(make_ctx: MakeCtx) -> None:
    a = _base()
    b = _edit(a, (20, 30, 60, 50)).resize((256, 256), Image.Resampling.BILINEAR)
    ctx = make_ctx("text_guided_ie", "edit_success", {"source": a, "output": b})
    result = await DifferenceTool().run(ctx)
    _match(result.boxes["source"], [(20, 30, 60, 50)])
    _match(result.boxes["output"], [(40, 60, 120, 100)], tol=2 * TOL)
    assert "resized" in result.text
    assert fmt_box(result.boxes["source"][0]) in result.text
    assert fmt_box(result.boxes["output"][0]) in result.text


async def test_tool_follows_the_configured_thresholds(make_ctx: MakeCtx) -> None:
    a = _base()
    b = _edit(a, (20, 30, 60, 50), colour=(120, 120, 60))  # a modest change
    images = {"source": a, "output": b}
    found = await DifferenceTool().run(make_ctx("text_guided_ie", "edit_success", images))
    assert found.highlighted
    blind = EvalConfig(method="extended", difference=DifferenceConfig(threshold=250))
    ctx = make_ctx("text_guided_ie", "edit_success", images, config=blind)
    assert not (await DifferenceTool().run(ctx)).highlighted


async def test_capped_regions_report_the_true_count(make_ctx: MakeCtx) -> None:
    a = _base()
    rects = [(2 + i * 25, 10, 2 + i * 25 + 6 + 3 * i, 30) for i in range(5)]
    config = EvalConfig(method="extended", difference=DifferenceConfig(max_regions=3))
    ctx = make_ctx("text_guided_ie", "edit_success", {"source": a, "output": _edit(a, *rects)})
    ctx.config = config
    report = compare_images(a, _edit(a, *rects), config=config.difference)
    assert len(report.regions) == 3 and report.regions_found == 5
    result = await DifferenceTool().run(ctx)
    assert "5 changed regions" in result.text
    assert "(showing the 3 largest of 5)" in result.text
    assert result.data["regions_found"] == 5


async def test_change_over_nearly_the_whole_image_is_not_dimmed(make_ctx: MakeCtx) -> None:
    a = _base()
    b = _edit(a, (0, 0, 128, 124))  # 97% of the image changed
    ctx = make_ctx("text_guided_ie", "over_editing", {"source": a, "output": b}, instruction="x")
    result = await DifferenceTool().run(ctx)
    assert not result.highlighted and result.images == {}
    assert "nearly all of it" in result.text and "nothing is dimmed" in result.text
    assert "dimmed to 1/4" not in result.text
    assert result.boxes["source"]  # the evidence is still reported
    assert result.data["highlight_coverage"] >= 0.9
    # just under the threshold the regions are highlighted again
    partial = _edit(a, (0, 0, 128, 100))  # 78%
    ctx = make_ctx("text_guided_ie", "over_editing", {"source": a, "output": partial})
    assert (await DifferenceTool().run(ctx)).highlighted


def test_official_preset_fills_what_is_not_given() -> None:
    official = DifferenceConfig(preset="official")
    assert (official.blur_kernel, official.measure, official.threshold) == (5, "gray", 45)
    assert (official.dilation, official.min_area_fraction, official.area_of) == (3, 0.005, "box")
    assert official.max_regions == 1
    tuned = DifferenceConfig(preset="official", threshold=40)
    assert tuned.threshold == 40 and tuned.measure == "gray"
    assert DifferenceConfig().threshold == 30 and DifferenceConfig().measure == "max_channel"
    nested = EvalConfig.model_validate({"difference": {"preset": "official"}})
    assert nested.difference == official


def test_official_numbers_keep_the_largest_gray_change_only() -> None:
    a = Image.new("RGB", (100, 100), (200, 50, 50))
    # a large bright change, a small bright change, and a change of the blue channel alone
    b = _edit(a, (10, 10, 40, 40), colour=(255, 255, 255))
    b = _edit(b, (70, 70, 80, 80), colour=(255, 255, 255))
    b = _edit(b, (60, 10, 90, 30), colour=(200, 50, 150))
    ours = compare_images(a, b, config=DifferenceConfig())
    assert ours.regions_found == 3
    # The official thresholds with cigeval's boxing (the official boxing: test_official_steps)
    official = compare_images(a, b, config=DifferenceConfig(preset="official", steps="cigeval"))
    assert official.regions_found == 2  # gray weighs blue 0.114: 100 * 0.114 < 45
    _match(official.regions, [(10, 10, 40, 40)])  # only the largest is kept


def test_area_of_box_counts_the_bounding_box_not_the_pixels() -> None:
    a = _base()
    # a thin diagonal line: few changed pixels, a large bounding box
    line = np.asarray(a).copy()
    for i in range(60):
        line[20 + i, 20 + i] = (255, 0, 0)
    b = Image.fromarray(line)
    by_pixels = DifferenceConfig(min_area_fraction=0.01, dilation=0, blur_kernel=1)
    assert compare_images(a, b, config=by_pixels).regions == []
    by_box = by_pixels.model_copy(update={"area_of": "box"})
    assert len(compare_images(a, b, config=by_box).regions) == 1


async def test_an_rgba_mask_is_read_by_its_alpha(make_ctx: MakeCtx, tmp_path) -> None:
    from cigeval.images import load_image

    # opaque white square on a fully transparent (white) background: the square is the edit
    rgba = np.zeros((128, 128, 4), np.uint8)
    rgba[..., :3] = 255
    rgba[30:70, 30:70, 3] = 255
    Image.fromarray(rgba, "RGBA").save(tmp_path / "mask.png")
    mask = load_image(tmp_path / "mask.png", role="mask", mask=True).pixels()
    assert np.array_equal(np.asarray(mask.convert("L")) > 127, _mask((30, 30, 70, 70)))
    # composited on white (how other images are read) it would say "edit everywhere"
    whole = load_image(tmp_path / "mask.png", role="mask").pixels()
    assert (np.asarray(whole.convert("L")) > 127).all()
    a = _base()
    b = _edit(a, (35, 35, 60, 60), (90, 90, 110, 110))
    ctx = make_ctx(
        "mask_guided_ie", "over_editing", {"source": a, "mask": mask, "output": b}, instruction="x"
    )
    result = await DifferenceTool().run(ctx)
    assert result.data["mask_box"]["box"] == [30, 30, 70, 70]
    assert "OUTSIDE the mask" in result.text


def test_mask_alpha_rules() -> None:
    from cigeval.images import mask_to_rgb

    # uniform alpha: the colours carry the mask (alpha ignored, even fully transparent)
    painted = np.zeros((8, 8, 4), np.uint8)
    painted[2:4, 2:4, :3] = 255
    for alpha in (0, 255):
        painted[..., 3] = alpha
        gray = np.asarray(mask_to_rgb(Image.fromarray(painted, "RGBA")).convert("L"))
        assert (gray > 127).sum() == 4
    # a grayscale mask with alpha: opaque pixels are the region, whatever their value
    la = np.zeros((8, 8, 2), np.uint8)
    la[5:8, 5:8, 1] = 255
    gray = np.asarray(mask_to_rgb(Image.fromarray(la, "LA")).convert("L"))
    assert (gray > 127).sum() == 9 and gray[6, 6] == 255
