"""Pixel difference between two images as a list of changed regions (paper §3.2, Difference).

The change map: bring the second image to the first one's size, blur both, take the
per-pixel absolute difference (grayscale as the official code, or the largest channel),
threshold it. Then boxes, in one of two ways (``DifferenceConfig.steps``):

- ``official`` (the paper method's "MaskFocus"): one dilation, the bounding box of every
  contour, boxes over a share of the image, the official code's single merge pass (quirks
  kept, see :mod:`cigeval.tools._official_difference`), the largest box; both images are
  highlighted with that box as it is.
- ``cigeval``: dilation joins nearby changes, connected components are boxed tightly on the
  changed pixels, tiny ones dropped, boxes merged until no two touch, the largest kept; each
  image is highlighted in its own pixels.

With ``mask="split"`` and a mask (mask-guided editing) changes inside and outside the mask
are found separately: the outside ones are the over-editing evidence. Every pixel operation
is OpenCV's (about 10 ms for a 1024x1024 pair, highlight included).

``robust=True`` makes the change map another way (:mod:`cigeval.tools._robust_difference`):
a small shift undone, the global tone matched, the change measured by structure (SSIM), the
thresholds set from the image's own noise; when most of the picture changed, the one region
is the whole image (``whole_image_changed``). The boxes are then made as above.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from cigeval.images import load_mask, to_rgb
from cigeval.tools._format import FOCUS_TEXT, box_record, fmt_box, fmt_boxes, percent
from cigeval.tools._official_difference import (
    contour_rects,
    largest_first,
    official_merge_pass,
)
from cigeval.tools.base import Box, ToolContext, ToolResult
from cigeval.tools.boxes import merge_boxes, scale_box
from cigeval.tools.highlight import (
    DIM_FACTOR,
    NEARLY_WHOLE_IMAGE,
    coverage,
    highlight_pixels,
    pixel_spans,
)
from cigeval.tools.settings import DifferenceConfig

if TYPE_CHECKING:
    from cigeval.config import EvalConfig

#: Labels of the boxes Difference returns (``Box.label``).
CHANGED = "changed"
INSIDE_MASK = "changed inside mask"
OUTSIDE_MASK = "changed outside mask"
MASK_REGION = "mask region"
WHOLE_IMAGE = "whole image changed"


@dataclass
class DifferenceReport:
    """Everything :func:`compare_images` found.

    Boxes in ``regions`` (and ``inside_mask`` / ``outside_mask``) are in the first image's
    pixel coordinates; ``regions_b`` holds the boxes highlighted on the second image: the same
    regions in its own coordinates (``cigeval`` steps), or the very same boxes (``official``
    steps, as the official code). They differ only when the resolutions differ.
    ``changed_fraction`` is the share of the first image's pixels whose difference passed
    the threshold (before dilation). ``regions_found`` (and ``inside_found`` /
    ``outside_found``) count every region found, before ``max_regions`` kept the largest.
    With ``robust`` settings, ``shift`` is how far the second image's content sits right and
    down of the first's (undone before comparing, added back for the second image's boxes),
    and ``whole_image_changed`` says the change covers most of the picture (the one region is
    then the whole image).
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
    #: The second image is highlighted with the first image's boxes unscaled (official).
    same_boxes_on_b: bool = False
    shift: tuple[float, float] = (0.0, 0.0)
    whole_image_changed: bool = False

    @property
    def scale(self) -> tuple[float, float]:
        """``(sx, sy)`` mapping the first image's coordinates onto the second's."""
        if self.same_boxes_on_b:
            return 1.0, 1.0
        return self.size_b[0] / self.size_a[0], self.size_b[1] / self.size_a[1]

    def to_b(self, box: Box) -> Box:
        """``box`` (first image's coordinates) as highlighted on the second image."""
        if self.same_boxes_on_b:
            return box
        return self.in_b(box)

    def in_b(self, box: Box) -> Box:
        """``box`` (first image's coordinates) where it lies in the second image's own pixels
        (moved by the ``shift`` found, scaled by the sizes, whatever the steps highlight
        there), clipped to that image."""
        if self.shift != (0.0, 0.0) and box.label != WHOLE_IMAGE:
            dx, dy = self.shift
            width, height = self.size_a
            box = replace(
                box,
                x0=min(max(box.x0 + dx, 0.0), width),
                y0=min(max(box.y0 + dy, 0.0), height),
                x1=min(max(box.x1 + dx, 0.0), width),
                y1=min(max(box.y1 + dy, 0.0), height),
            )
        return scale_box(box, self.size_b[0] / self.size_a[0], self.size_b[1] / self.size_a[1])


def _odd(size: int) -> int:
    return size if size % 2 == 1 else size + 1


def _as_mask(mask: np.ndarray | Image.Image, width: int, height: int) -> np.ndarray:
    """A 0/255 uint8 mask of the first image's size (True or white = the edit region)."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    chosen = np.asarray(mask.convert("L")) > 127 if isinstance(mask, Image.Image) else mask
    region = np.where(np.asarray(chosen).astype(bool), 255, 0).astype(np.uint8)
    if region.shape != (height, width):
        return np.asarray(cv2.resize(region, (width, height), interpolation=cv2.INTER_NEAREST))
    return region


def change_map(a: np.ndarray, b: np.ndarray, config: DifferenceConfig) -> np.ndarray:
    """A 0/255 uint8 map of the pixels whose blurred difference exceeds the threshold.

    ``a`` and ``b`` are RGB uint8 arrays of one size.
    """
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    kernel = _odd(config.blur_kernel)
    if kernel > 1:
        a = cv2.GaussianBlur(a, (kernel, kernel), 0)
        b = cv2.GaussianBlur(b, (kernel, kernel), 0)
    absolute = cv2.absdiff(a, b)
    if config.measure == "gray":
        # The official code's BGR-to-gray of its BGR arrays: the same weights on RGB ones.
        diff = cv2.cvtColor(absolute, cv2.COLOR_RGB2GRAY)
    else:
        # The largest per-channel difference: grayscale weights would shrink a change that
        # lies mostly in one channel (blue counts 0.11) below the threshold.
        red, green, blue = cv2.split(absolute)
        diff = cv2.max(cv2.max(red, green), blue)
    _, changed = cv2.threshold(diff, config.threshold, 255, cv2.THRESH_BINARY)
    return np.asarray(changed)


def _dilated(changed: np.ndarray, size: int) -> np.ndarray:
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    if size <= 1:
        return changed
    return np.asarray(cv2.dilate(changed, np.ones((size, size), np.uint8)))


def _official_regions(
    changed: np.ndarray, config: DifferenceConfig, label: str
) -> tuple[list[Box], int]:
    """The official steps: contour boxes of the dilated map, one merge pass, the largest."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    joined = _dilated(changed, config.dilation)
    min_area = config.min_area_fraction * changed.size
    rects = []
    for x, y, w, h in contour_rects(joined):
        by_box = config.area_of == "box"
        size = w * h if by_box else cv2.countNonZero(changed[y : y + h, x : x + w])
        if size > min_area:  # strictly larger, as the official code
            rects.append((x, y, w, h))
    merged = official_merge_pass(rects)
    kept = largest_first(merged, config.max_regions)
    boxes = [Box(float(x), float(y), float(x + w), float(y + h), label) for x, y, w, h in kept]
    return boxes, len(merged)


def _cigeval_regions(
    changed: np.ndarray, config: DifferenceConfig, label: str
) -> tuple[list[Box], int]:
    """Connected components of the dilated map, boxed on their changed pixels, merged."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light
    from scipy import ndimage

    count, labels = cv2.connectedComponents(_dilated(changed, config.dilation), connectivity=8)
    # Box the changed pixels of each component, not the dilated blob, so boxes stay tight.
    is_changed = changed > 0
    own = np.where(is_changed, labels, 0)
    pixels = np.bincount(labels[is_changed], minlength=count)  # changed pixels only: few
    min_area = config.min_area_fraction * changed.size
    boxes = []
    for index, span in enumerate(ndimage.find_objects(own), start=1):
        if span is None or pixels[index] == 0:
            continue
        rows, cols = span
        box = Box(float(cols.start), float(rows.start), float(cols.stop), float(rows.stop), label)
        size = box.area if config.area_of == "box" else pixels[index]
        if size >= min_area:
            boxes.append(box)
    merged = merge_boxes(boxes)
    merged.sort(key=lambda b: b.area, reverse=True)
    return merged[: config.max_regions], len(merged)


def _regions(changed: np.ndarray, config: DifferenceConfig, label: str) -> tuple[list[Box], int]:
    """The largest ``config.max_regions`` changed regions, and how many were found in all."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    if cv2.countNonZero(changed) == 0:
        return [], 0
    if config.steps == "official":
        return _official_regions(changed, config, label)
    return _cigeval_regions(changed, config, label)


def _resized_to(
    pixels: np.ndarray, width: int, height: int, config: DifferenceConfig
) -> np.ndarray:
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    if config.steps == "official":  # the official code: OpenCV's default, bilinear
        return np.asarray(cv2.resize(pixels, (width, height)))
    shrinking = pixels.shape[0] * pixels.shape[1] > width * height
    interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
    return np.asarray(cv2.resize(pixels, (width, height), interpolation=interpolation))


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
    those inside and those outside it, unless ``config.mask`` is ``ignore``. Changes within
    a small margin around the mask count as inside, so the blur and blending at the mask's
    edge are not reported as over-editing.
    """
    return compare_arrays(np.asarray(to_rgb(a)), np.asarray(to_rgb(b)), config=config, mask=mask)


def compare_arrays(
    arr_a: np.ndarray,
    arr_b: np.ndarray,
    *,
    config: DifferenceConfig,
    mask: np.ndarray | Image.Image | None = None,
) -> DifferenceReport:
    """:func:`compare_images` of two RGB uint8 arrays (``(h, w, 3)``)."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    (height, width), size_b = arr_a.shape[:2], (arr_b.shape[1], arr_b.shape[0])
    if size_b != (width, height):
        arr_b = _resized_to(arr_b, width, height, config)
    report = DifferenceReport(
        size_a=(width, height), size_b=size_b, same_boxes_on_b=config.steps == "official"
    )
    if config.robust:
        from cigeval.tools._robust_difference import robust_change_map

        robust = robust_change_map(arr_a, arr_b)
        changed = robust.changed
        report.shift, report.whole_image_changed = robust.shift, robust.whole_image
    else:
        changed = change_map(arr_a, arr_b, config)
    report.changed_fraction = cv2.countNonZero(changed) / changed.size
    if report.whole_image_changed:
        report.regions = [Box(0.0, 0.0, float(width), float(height), WHOLE_IMAGE)]
        report.regions_found = 1
        if mask is not None and config.mask != "ignore":
            report.mask_box = _mask_box(_as_mask(mask, width, height))
    elif mask is None or config.mask == "ignore":
        report.regions, report.regions_found = _regions(changed, config, CHANGED)
    else:
        region = _as_mask(mask, width, height)
        report.mask_box = _mask_box(region)
        if report.mask_box is not None:
            margin = _odd(config.blur_kernel) // 2 + 1
            region = _dilated(region, 2 * margin + 1)
        inside = cv2.bitwise_and(changed, region)
        outside = cv2.bitwise_and(changed, cv2.bitwise_not(region))
        report.inside_mask, report.inside_found = _regions(inside, config, INSIDE_MASK)
        report.outside_mask, report.outside_found = _regions(outside, config, OUTSIDE_MASK)
        report.changed_fraction_outside_mask = cv2.countNonZero(outside) / outside.size
        report.regions = report.inside_mask + report.outside_mask
        report.regions_found = report.inside_found + report.outside_found
    report.regions_b = [report.to_b(box) for box in report.regions]
    return report


def _mask_box(region: np.ndarray) -> Box | None:
    """The bounding box of a 0/255 mask, or None when it is empty."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    if not cv2.countNonZero(region):
        return None
    x, y, w, h = cv2.boundingRect(region)
    return Box(float(x), float(y), float(x + w), float(y + h), MASK_REGION)


def find_changed_regions(
    a: Image.Image,
    b: Image.Image,
    *,
    config: DifferenceConfig,
    mask: np.ndarray | Image.Image | None = None,
) -> list[Box]:
    """Boxes (in ``a``'s pixel coordinates) around the regions where ``b`` differs from ``a``.

    Largest first, at most ``config.max_regions`` (per side of the mask when a mask is split;
    labels then say inside or outside). See :func:`compare_images` for the boxes of ``b`` and
    the mask split.
    """
    return compare_images(a, b, config=config, mask=mask).regions


@dataclass
class DifferencesShown:
    """What the Difference tool shows: the highlighted images by role, the boxes marked on
    each image (the changed regions, and the mask region when the mask is split), each in
    that image's own pixels, and the share of the first image they cover."""

    images: dict[str, Image.Image]
    boxes: dict[str, list[Box]]
    covered: float


def show_differences(
    images: dict[str, Image.Image],
    config: EvalConfig,
    mask: np.ndarray | None = None,
    encode: Callable[[Image.Image], object] | None = None,
) -> tuple[DifferenceReport, DifferencesShown]:
    """Compare the two ``images`` (first against second) and highlight what changed in both.

    Each image is turned into pixels once for the comparison and the highlight. ``encode``
    (the sample's encoder) encodes the highlighted images right here, so a caller running
    this in a worker thread keeps that work off the event loop too.
    """
    (role_a, image_a), (role_b, image_b) = images.items()
    pixels_a, pixels_b = np.asarray(to_rgb(image_a)), np.asarray(to_rgb(image_b))
    report = compare_arrays(pixels_a, pixels_b, config=config.difference, mask=mask)
    marked = list(report.regions)
    if report.mask_box is not None and marked:
        marked.append(report.mask_box)
    if not marked:
        return report, DifferencesShown({}, {}, 0.0)
    marked_b = [report.to_b(b) for b in marked]
    covered = coverage(image_a, marked)
    keep_whole = config.highlight_large_boxes == "undimmed" and covered >= NEARLY_WHOLE_IMAGE
    shown: dict[str, Image.Image] = {}
    if not keep_whole:
        for role, pixels, boxes in ((role_a, pixels_a, marked), (role_b, pixels_b, marked_b)):
            spans = pixel_spans(pixels.shape[1], pixels.shape[0], boxes)
            if spans:
                shown[role] = Image.fromarray(highlight_pixels(pixels, spans))
                if encode is not None:
                    encode(shown[role])
    # the regions where they lie in each image (under the official steps the second image is
    # highlighted with the first image's boxes unscaled; its evidence is still its own pixels)
    found_b = [report.in_b(b) for b in marked]
    return report, DifferencesShown(shown, {role_a: marked, role_b: found_b}, covered)


class DifferenceTool:
    """The Difference tool: where did the second image of the sub-question change?

    Compares the first two images the sub-question shows (e.g. source and output; a mask is
    never one of them) and highlights the changed regions in both. The judge is told to look
    at the highlighted parts (``tool_text="focus"``) or given the regions, how many changed,
    where and how much of the image (``detailed``); with ``mask="split"`` and a ``mask``
    image, changes inside and outside the mask are reported separately.
    """

    name = "Difference"
    description = (
        "Finds the regions where two images differ at the pixel level (e.g. source vs. edited "
        "image) and highlights them. Useful to check whether an edit happened and whether "
        "anything beyond the requested edit changed (over-editing)."
    )
    #: The paper's description, shown to the planner under ``planner_prompt="paper"``.
    paper_description = (
        "Focuses on the masked area of the images: highlights the region where the edited "
        "image differs from the original (mask-guided image editing)."
    )

    async def run(self, ctx: ToolContext) -> ToolResult:
        """Compare the sub-question's two images and show (or describe) their differences."""
        shown_roles = {role: img for role, img in ctx.question_images().items() if role != "mask"}
        if len(shown_roles) < 2:
            which = ", ".join(shown_roles) or "none"
            return ToolResult(
                tool=self.name,
                text=(
                    "Difference needs two images to compare, but this sub-question shows only "
                    f"one ({which}). Nothing was compared and nothing is highlighted."
                ),
            )
        pair = dict(list(shown_roles.items())[:2])
        (role_a, _), (role_b, _) = pair.items()
        use_mask = "mask" in ctx.images and ctx.config.difference.mask == "split"
        mask = load_mask(ctx.images["mask"]) if use_mask else None
        report, shown = await asyncio.to_thread(
            show_differences, pair, ctx.config, mask, ctx.encode
        )
        data: dict[str, Any] = {
            "roles": [role_a, role_b],
            "changed_fraction": report.changed_fraction,
            "regions": [box_record(b) for b in report.regions],
            "regions_found": report.regions_found,
            "highlight_coverage": shown.covered,
        }
        if report.mask_box is not None:
            data["mask_box"] = box_record(report.mask_box)
            data["changed_fraction_outside_mask"] = report.changed_fraction_outside_mask
        if ctx.config.difference.robust:
            data["shift"] = list(report.shift)
            data["whole_image_changed"] = report.whole_image_changed
        if ctx.config.tool_text == "focus":
            text = FOCUS_TEXT
        else:
            dimmed = bool(shown.images)
            text = _describe(report, role_a, role_b, ctx.config.difference, dimmed, shown.covered)
        return ToolResult(
            tool=self.name,
            text=text,
            images=shown.images,
            boxes=shown.boxes,
            highlighted=bool(shown.images),
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
    if report.whole_image_changed:
        return (
            f"{head}: the whole image changed. Most of the picture differs beyond what "
            "re-rendering explains (a small shift, a tone change, compression), so there is "
            "no single changed region to point at: compare the whole images."
        )
    if not report.regions:
        if config.robust:
            why = "beyond the image's own noise, after undoing a small shift and the tone"
        else:
            why = f"by more than {config.threshold}/255 after smoothing"
        text = (
            f"{head}: no meaningful change found (no region differs {why}). Nothing is highlighted."
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
