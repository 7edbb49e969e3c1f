"""Pixel difference between two images as a list of changed regions (paper §3.2, Difference).

Pipeline: bring the second image to the first one's size, blur both, take the per-pixel
absolute difference (largest channel, or grayscale as the official code), threshold it,
dilate so nearby changed pixels join, take connected components, box them, drop tiny ones,
merge boxes that overlap or touch, keep the largest. With a mask (mask-guided editing)
changes inside and outside the mask are found separately: the outside ones are the
over-editing evidence. ``DifferenceConfig(preset="official")`` uses the official code's
values (blur 5, grayscale > 45, one 3x3 dilation, boxes over 0.5% of the image, the largest).
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
from cigeval.tools.highlight import DIM_FACTOR, NEARLY_WHOLE_IMAGE, coverage, highlight
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
    ``regions_found`` (and ``inside_found`` / ``outside_found``) count every region found,
    before ``max_regions`` kept only the largest.
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
    regions_found: int = 0
    inside_found: int = 0
    outside_found: int = 0

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
    absolute = cv2.absdiff(a, b)
    if config.measure == "gray":
        diff = cv2.cvtColor(absolute, cv2.COLOR_RGB2GRAY)  # as the official code
    else:
        # The largest per-channel difference: grayscale weights would shrink a change that
        # lies mostly in one channel (blue counts 0.11) below the threshold.
        diff = absolute.max(axis=2)
    return np.asarray(diff > config.threshold)


def _regions(changed: np.ndarray, config: DifferenceConfig, label: str) -> tuple[list[Box], int]:
    """The largest ``config.max_regions`` changed regions, and how many were found in all."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    if not changed.any():
        return [], 0
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
    min_area = config.min_area_fraction * changed.size
    boxes = []
    for c in range(1, count):
        if pixels[c] == 0:
            continue
        box = Box(float(x0[c]), float(y0[c]), float(x1[c] + 1), float(y1[c] + 1), label=label)
        size = box.area if config.area_of == "box" else pixels[c]
        if size >= min_area:
            boxes.append(box)
    merged = merge_boxes(boxes)
    merged.sort(key=lambda b: b.area, reverse=True)
    return merged[: config.max_regions], len(merged)


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
        report.regions, report.regions_found = _regions(changed, config, CHANGED)
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
        report.inside_mask, report.inside_found = _regions(changed & region, config, INSIDE_MASK)
        report.outside_mask, report.outside_found = _regions(outside, config, OUTSIDE_MASK)
        report.changed_fraction_outside_mask = float(outside.mean())
        report.regions = report.inside_mask + report.outside_mask
        report.regions_found = report.inside_found + report.outside_found
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
            "regions_found": report.regions_found,
        }
        if report.mask_box is not None:
            data["mask_box"] = box_record(report.mask_box)
            data["changed_fraction_outside_mask"] = report.changed_fraction_outside_mask
        marked = list(report.regions)
        if report.mask_box is not None and marked:
            marked.append(report.mask_box)
        marked_b = [report.to_b(b) for b in marked]
        covered = coverage(image_a, marked) if marked else 0.0
        # Boxes covering nearly all of the image: dimming the rest points at nothing.
        dim = bool(marked) and covered < NEARLY_WHOLE_IMAGE
        data["highlight_coverage"] = covered
        text = _describe(report, role_a, role_b, ctx.config.difference, dim, covered)
        if not marked:
            return ToolResult(tool=self.name, text=text, data=data)
        return ToolResult(
            tool=self.name,
            text=text,
            images=(
                {role_a: highlight(image_a, marked), role_b: highlight(image_b, marked_b)}
                if dim
                else {}
            ),
            boxes={role_a: marked, role_b: marked_b},
            highlighted=dim,
            data=data,
        )


def _counted(shown: list[Box], found: int) -> str:
    """The regions shown as a list, saying when only the largest of more are listed."""
    listed = fmt_boxes(shown)
    if found > len(shown):
        return f"{listed} (showing the {len(shown)} largest of {found})"
    return listed


def _describe(
    report: DifferenceReport,
    role_a: str,
    role_b: str,
    config: DifferenceConfig,
    dim: bool,
    covered: float,
) -> str:
    head = f"Difference between the {role_a} and the {role_b} image"
    if not report.regions:
        text = (
            f"{head}: no meaningful change found (no region differs by more than "
            f"{config.threshold}/255 after smoothing). Nothing is highlighted."
        )
        if report.mask_box is not None:
            text += f" This includes the mask region {fmt_box(report.mask_box)}."
        return text
    count = report.regions_found
    lines = [
        f"{head}: {count} changed region{'s' if count != 1 else ''}, "
        f"{percent(report.changed_fraction)} of the image's pixels changed."
    ]
    scaled = report.size_a != report.size_b
    coords = f"{role_a} pixels" + (f" ({report.size_a[0]}x{report.size_a[1]})" if scaled else "")
    if report.mask_box is None:
        lines.append(
            f"Changed regions as [x0, y0, x1, y1] in {coords}: "
            f"{_counted(report.regions, report.regions_found)}."
        )
    else:
        lines.append(
            f"Mask region (where the edit was asked for), in {coords}: {fmt_box(report.mask_box)}."
        )
        inside = _counted(report.inside_mask, report.inside_found) if report.inside_mask else "none"
        lines.append(f"Changed regions inside the mask: {inside}.")
        if report.outside_mask:
            share = percent(report.changed_fraction_outside_mask or 0.0)
            lines.append(
                f"Changed regions OUTSIDE the mask ({share} of the image): "
                f"{_counted(report.outside_mask, report.outside_found)}."
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
    what = "The changed regions" + (" and the mask region" if report.mask_box is not None else "")
    if dim:
        lines.append(
            f"{what} are highlighted in both images; everything else is dimmed to 1/{DIM_FACTOR}."
        )
    else:
        lines.append(
            f"{what} cover {percent(covered)} of the image, nearly all of it, so nothing is "
            "dimmed or highlighted: compare the whole images."
        )
    return "\n".join(lines)
