"""Pixel difference between two images as a list of changed regions (paper §3.2, Difference).

Pipeline: bring the second image to the first one's size, blur both, take the per-pixel
absolute difference, threshold it, dilate so nearby changed pixels join, take connected
components, box them, drop tiny ones, merge boxes that overlap or touch, keep the largest.
With a mask (mask-guided editing) changes inside and outside the mask are found separately:
the outside ones are the over-editing evidence.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from cigeval.images import load_mask, to_rgb
from cigeval.tools._format import box_record, fmt_box, fmt_boxes, percent
from cigeval.tools.base import Box, ToolContext, ToolResult
from cigeval.tools.boxes import merge_boxes, scale_box
from cigeval.tools.highlight import DIM_FACTOR, highlight
from cigeval.tools.settings import DifferenceConfig

#: Labels of the boxes Difference returns (``Box.label``).
CHANGED = "changed"
INSIDE_MASK = "changed inside mask"
OUTSIDE_MASK = "changed outside mask"
MASK_REGION = "mask region"


@dataclass
class DifferenceReport:
    """Everything :func:`compare_images` found.

    Boxes in ``regions`` (and ``inside_mask`` / ``outside_mask``) are in the first image's
    pixel coordinates; ``regions_b`` holds the same regions in the second image's coordinates
    (they differ only when the resolutions differ). ``changed_fraction`` is the share of the
    first image's pixels whose difference passed the threshold (before dilation).
    """

    size_a: tuple[int, int]
    size_b: tuple[int, int]
    regions: list[Box] = field(default_factory=list)
    regions_b: list[Box] = field(default_factory=list)
    changed_fraction: float = 0.0
    mask_box: Box | None = None
    inside_mask: list[Box] = field(default_factory=list)
    outside_mask: list[Box] = field(default_factory=list)
    changed_fraction_outside_mask: float | None = None

    @property
    def scale(self) -> tuple[float, float]:
        """``(sx, sy)`` mapping the first image's coordinates onto the second's."""
        return self.size_b[0] / self.size_a[0], self.size_b[1] / self.size_a[1]

    def to_b(self, box: Box) -> Box:
        """``box`` (first image's coordinates) in the second image's coordinates."""
        return scale_box(box, *self.scale)


def _odd(size: int) -> int:
    return size if size % 2 == 1 else size + 1


def _as_mask(mask: np.ndarray | Image.Image, width: int, height: int) -> np.ndarray:
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    if isinstance(mask, Image.Image):
        mask = np.asarray(mask.convert("L")) > 127
    mask = np.asarray(mask).astype(bool)
    if mask.shape != (height, width):
        resized = cv2.resize(
            mask.astype(np.uint8), (width, height), interpolation=cv2.INTER_NEAREST
        )
        mask = resized.astype(bool)
    return mask


def _changed_pixels(a: np.ndarray, b: np.ndarray, config: DifferenceConfig) -> np.ndarray:
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    kernel = _odd(config.blur_kernel)
    if kernel > 1:
        a = cv2.GaussianBlur(a, (kernel, kernel), 0)
        b = cv2.GaussianBlur(b, (kernel, kernel), 0)
    # The largest per-channel difference, not a grayscale one: a colour swap of equal
    # luminance (red car -> green car) is invisible in grayscale.
    diff = cv2.absdiff(a, b).max(axis=2)
    return np.asarray(diff > config.threshold)


def _regions(changed: np.ndarray, config: DifferenceConfig, label: str) -> list[Box]:
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    if not changed.any():
        return []
    joined: np.ndarray = changed.astype(np.uint8)
    if config.dilation > 1:
        joined = cv2.dilate(joined, np.ones((config.dilation, config.dilation), np.uint8))
    count, labels = cv2.connectedComponents(joined, connectivity=8)
    # Box the changed pixels of each component, not the dilated blob, so boxes stay tight.
    ys, xs = np.nonzero(changed)
    component = np.asarray(labels[ys, xs], dtype=np.intp)
    pixels = np.bincount(component, minlength=count)
    x0 = np.full(count, np.iinfo(np.int64).max)
    y0 = np.full(count, np.iinfo(np.int64).max)
    x1 = np.full(count, -1)
    y1 = np.full(count, -1)
    np.minimum.at(x0, component, xs)
    np.minimum.at(y0, component, ys)
    np.maximum.at(x1, component, xs)
    np.maximum.at(y1, component, ys)
    min_pixels = config.min_area_fraction * changed.size
    boxes = [
        Box(float(x0[c]), float(y0[c]), float(x1[c] + 1), float(y1[c] + 1), label=label)
        for c in range(1, count)
        if pixels[c] > 0 and pixels[c] >= min_pixels
    ]
    merged = merge_boxes(boxes)
    merged.sort(key=lambda b: b.area, reverse=True)
    return merged[: config.max_regions]


def compare_images(
    a: Image.Image,
    b: Image.Image,
    *,
    config: DifferenceConfig,
    mask: np.ndarray | Image.Image | None = None,
) -> DifferenceReport:
    """Find the regions where ``b`` differs from ``a``.

    ``b`` is resized to ``a``'s size when the resolutions differ. ``mask`` (True or white =
    the region meant to change; resized to ``a``'s size if needed) splits the changes into
    those inside and those outside it. Changes within a small margin around the mask count as
    inside, so the blur and blending at the mask's edge are not reported as over-editing.
    """
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    rgb_a, rgb_b = to_rgb(a), to_rgb(b)
    width, height = rgb_a.size
    arr_a = np.asarray(rgb_a)
    arr_b = np.asarray(rgb_b)
    if rgb_b.size != rgb_a.size:
        shrinking = rgb_b.width * rgb_b.height > width * height
        interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
        arr_b = cv2.resize(arr_b, (width, height), interpolation=interpolation)
    changed = _changed_pixels(arr_a, arr_b, config)
    report = DifferenceReport(size_a=rgb_a.size, size_b=rgb_b.size)
    report.changed_fraction = float(changed.mean())
    if mask is None:
        report.regions = _regions(changed, config, CHANGED)
    else:
        region = _as_mask(mask, width, height)
        if region.any():
            ys, xs = np.nonzero(region)
            report.mask_box = Box(
                float(xs.min()),
                float(ys.min()),
                float(xs.max() + 1),
                float(ys.max() + 1),
                label=MASK_REGION,
            )
            margin = _odd(config.blur_kernel) // 2 + 1
            grown = cv2.dilate(region.astype(np.uint8), np.ones((2 * margin + 1,) * 2, np.uint8))
            region = grown.astype(bool)
        outside = changed & ~region
        report.inside_mask = _regions(changed & region, config, INSIDE_MASK)
        report.outside_mask = _regions(outside, config, OUTSIDE_MASK)
        report.changed_fraction_outside_mask = float(outside.mean())
        report.regions = report.inside_mask + report.outside_mask
    report.regions_b = [report.to_b(box) for box in report.regions]
    return report


def find_changed_regions(
    a: Image.Image,
    b: Image.Image,
    *,
    config: DifferenceConfig,
    mask: np.ndarray | Image.Image | None = None,
) -> list[Box]:
    """Boxes (in ``a``'s pixel coordinates) around the regions where ``b`` differs from ``a``.

    Largest first, at most ``config.max_regions`` (per side of the mask when a mask is given;
    labels then say inside or outside). See :func:`compare_images` for boxes in ``b``'s
    coordinates and the mask split.
    """
    return compare_images(a, b, config=config, mask=mask).regions


class DifferenceTool:
    """The Difference tool: where did the second image of the sub-question change?

    Compares the first two images the sub-question shows (e.g. source and output; a mask is
    never one of them), highlights the changed regions in both, and reports how many regions
    changed, where, and how much of the image. When the sample has a ``mask`` image, changes
    inside and outside the mask are reported separately.
    """

    name = "Difference"
    description = (
        "Finds the regions where two images differ at the pixel level (e.g. source vs. edited "
        "image) and highlights them. Useful to check whether an edit happened and whether "
        "anything beyond the requested edit changed (over-editing)."
    )

    async def run(self, ctx: ToolContext) -> ToolResult:
        """Compare the sub-question's two images and describe their differences."""
        shown = {role: img for role, img in ctx.question_images().items() if role != "mask"}
        if len(shown) < 2:
            which = ", ".join(shown) or "none"
            return ToolResult(
                tool=self.name,
                text=(
                    "Difference needs two images to compare, but this sub-question shows only "
                    f"one ({which}). Nothing was compared and nothing is highlighted."
                ),
            )
        (role_a, image_a), (role_b, image_b) = list(shown.items())[:2]
        mask = load_mask(ctx.images["mask"]) if "mask" in ctx.images else None
        report = await asyncio.to_thread(
            compare_images, image_a, image_b, config=ctx.config.difference, mask=mask
        )
        data: dict[str, Any] = {
            "roles": [role_a, role_b],
            "changed_fraction": report.changed_fraction,
            "regions": [box_record(b) for b in report.regions],
        }
        if report.mask_box is not None:
            data["mask_box"] = box_record(report.mask_box)
            data["changed_fraction_outside_mask"] = report.changed_fraction_outside_mask
        text = _describe(report, role_a, role_b, ctx.config.difference)
        if not report.regions:
            return ToolResult(tool=self.name, text=text, data=data)
        marked = list(report.regions)
        if report.mask_box is not None:
            marked.append(report.mask_box)
        marked_b = [report.to_b(b) for b in marked]
        return ToolResult(
            tool=self.name,
            text=text,
            images={role_a: highlight(image_a, marked), role_b: highlight(image_b, marked_b)},
            boxes={role_a: marked, role_b: marked_b},
            highlighted=True,
            data=data,
        )


def _describe(report: DifferenceReport, role_a: str, role_b: str, config: DifferenceConfig) -> str:
    head = f"Difference between the {role_a} and the {role_b} image"
    if not report.regions:
        text = (
            f"{head}: no meaningful change found (no region differs by more than "
            f"{config.threshold}/255 after smoothing). Nothing is highlighted."
        )
        if report.mask_box is not None:
            text += f" This includes the mask region {fmt_box(report.mask_box)}."
        return text
    count = len(report.regions)
    lines = [
        f"{head}: {count} changed region{'s' if count != 1 else ''}, "
        f"{percent(report.changed_fraction)} of the image's pixels changed."
    ]
    scaled = report.size_a != report.size_b
    coords = f"{role_a} pixels" + (f" ({report.size_a[0]}x{report.size_a[1]})" if scaled else "")
    if report.mask_box is None:
        lines.append(
            f"Changed regions as [x0, y0, x1, y1] in {coords}: {fmt_boxes(report.regions)}."
        )
    else:
        lines.append(
            f"Mask region (where the edit was asked for), in {coords}: {fmt_box(report.mask_box)}."
        )
        inside = fmt_boxes(report.inside_mask) if report.inside_mask else "none"
        lines.append(f"Changed regions inside the mask: {inside}.")
        if report.outside_mask:
            share = percent(report.changed_fraction_outside_mask or 0.0)
            lines.append(
                f"Changed regions OUTSIDE the mask ({share} of the image): "
                f"{fmt_boxes(report.outside_mask)}."
            )
        else:
            lines.append("No change outside the mask.")
    if scaled:
        lines.append(
            f"The {role_b} image is {report.size_b[0]}x{report.size_b[1]}; it was resized to "
            f"compare. The same regions in {role_b} pixels: {fmt_boxes(report.regions_b)}."
        )
        if report.mask_box is not None:
            lines.append(
                f"The mask region in {role_b} pixels: {fmt_box(report.to_b(report.mask_box))}."
            )
    lines.append(
        "The changed regions"
        + (" and the mask region" if report.mask_box is not None else "")
        + f" are highlighted in both images; everything else is dimmed to 1/{DIM_FACTOR}."
    )
    return "\n".join(lines)
