"""highlight(): a quarter of the value outside the boxes, untouched inside."""

from __future__ import annotations

import numpy as np
from PIL import Image

from cigeval.tools import Box, highlight
from cigeval.tools.highlight import any_highlight


def _random_image(width: int = 40, height: int = 30, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def test_outside_is_floor_of_quarter_inside_identical() -> None:
    image = _random_image()
    original = np.asarray(image).copy()
    out = np.asarray(highlight(image, [Box(5, 4, 15, 12)]))
    inside = np.zeros(original.shape[:2], bool)
    inside[4:12, 5:15] = True
    assert np.array_equal(out[inside], original[inside])
    assert np.array_equal(out[~inside], original[~inside] // 4)
    # The input image itself is not modified.
    assert np.array_equal(np.asarray(image), original)


def test_exact_values_of_dimming() -> None:
    image = Image.new("RGB", (4, 1), (255, 7, 3))
    out = np.asarray(highlight(image, [Box(0, 0, 1, 1)]))
    assert out[0, 0].tolist() == [255, 7, 3]
    assert out[0, 1].tolist() == [63, 1, 0]


def test_several_boxes_union() -> None:
    image = _random_image(seed=1)
    original = np.asarray(image)
    boxes = [Box(0, 0, 5, 5), Box(20, 10, 30, 25), Box(3, 3, 8, 8)]
    out = np.asarray(highlight(image, boxes))
    inside = np.zeros(original.shape[:2], bool)
    inside[0:5, 0:5] = inside[10:25, 20:30] = inside[3:8, 3:8] = True
    assert np.array_equal(out[inside], original[inside])
    assert np.array_equal(out[~inside], original[~inside] // 4)


def test_out_of_range_boxes_are_clipped() -> None:
    image = _random_image(seed=2)
    original = np.asarray(image)
    out = np.asarray(highlight(image, [Box(-10, -10, 3, 2), Box(35, 25, 400, 400)]))
    inside = np.zeros(original.shape[:2], bool)
    inside[0:2, 0:3] = True
    inside[25:30, 35:40] = True
    assert np.array_equal(out[inside], original[inside])
    assert np.array_equal(out[~inside], original[~inside] // 4)


def test_fractional_box_covers_partly_covered_pixels() -> None:
    image = _random_image(seed=3)
    original = np.asarray(image)
    out = np.asarray(highlight(image, [Box(2.5, 1.2, 4.1, 3.0)]))
    assert np.array_equal(out[1:3, 2:5], original[1:3, 2:5])
    assert np.array_equal(out[0, 2:5], original[0, 2:5] // 4)
    assert np.array_equal(out[1:3, 5], original[1:3, 5] // 4)


def test_no_boxes_returns_image_unchanged() -> None:
    image = _random_image(seed=4)
    assert highlight(image, []) is image
    assert not any_highlight(image, [])


def test_boxes_entirely_outside_count_as_nothing_highlighted() -> None:
    image = _random_image(seed=5)
    boxes = [Box(100, 100, 120, 120), Box(-20, 0, -5, 10), Box(10, 10, 10, 20)]
    assert highlight(image, boxes) is image
    assert not any_highlight(image, boxes)
    assert any_highlight(image, [Box(39.5, 29.5, 50, 50)])


def test_non_rgb_input_is_converted() -> None:
    image = Image.new("L", (6, 6), 200)
    out = highlight(image, [Box(0, 0, 3, 6)])
    assert out.mode == "RGB"
    assert np.asarray(out)[0, 0].tolist() == [200, 200, 200]
    assert np.asarray(out)[0, 5].tolist() == [50, 50, 50]
