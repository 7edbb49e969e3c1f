"""Zoom: the region that matters, cropped from each image at full resolution and enlarged.

A judge is shown whole images at the size it takes them in; an edit of a few dozen pixels is a
speck there. Zoom crops the region from every image the sub-question shows and enlarges the
crop to the image's own size (``ZoomConfig.size``: another), so the judge sees the region at
full resolution beside the whole images (the crops are shown after them, never in place).

Which region (the first that gives one):

1. a box the query gives, ``[x0, y0, x1, y1]`` in the first image's pixels (or as fractions
   of its sides when every number is at most 1);
2. the regions the sub-question's earlier rounds' tools found (``ToolContext.found``);
3. the regions Zoom finds with the offered tools: Difference when the sub-question compares
   two images and the query names nothing, else Grounding of the query (or of the
   sub-question's default query).

Each region gets some context around it (``context``), is widened to the image's aspect ratio
and to at least ``1 / max_zoom`` of its sides; two regions share a window when it is no larger
than their two apart, and a region inside a window needs none; the windows of the
``max_crops`` largest regions are shown. The same window, in each image's own pixels, is
cropped from every image. The windows are the tool's evidence (``zoomed region``), with the
regions Zoom found itself (under the tool that found them).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, replace

from PIL import Image

from cigeval.images import to_rgb
from cigeval.tools._format import fmt_box
from cigeval.tools.base import Box, ToolContext, ToolResult, ToolView
from cigeval.tools.boxes import clip_box, scale_box, union_box
from cigeval.tools.settings import ZoomConfig

#: The label of a zoom window in the evidence.
ZOOMED = "zoomed region"
#: A window enlarged less than this is not worth a crop: the judge sees it whole already.
_LEAST_ZOOM = 1.25
_NUMBER = r"\s*(-?\d+(?:\.\d+)?)\s*"
_BOX = re.compile(r"\[?" + ",".join([_NUMBER] * 4) + r"\]?")


@dataclass(frozen=True)
class Window:
    """A crop window in the first image's pixels and how much it is enlarged."""

    box: Box
    zoom: float


def query_box(query: str | None, width: int, height: int) -> Box | None:
    """The box a query gives as ``[x0, y0, x1, y1]`` (pixels, or fractions of the sides when
    every number is at most 1), clipped to the image; None when the query is no box."""
    match = _BOX.fullmatch((query or "").strip())
    if match is None:
        return None
    x0, y0, x1, y1 = (float(v) for v in match.groups())
    if max(x0, y0, x1, y1) <= 1:
        x0, x1, y0, y1 = x0 * width, x1 * width, y0 * height, y1 * height
    return clip_box(Box(x0, y0, x1, y1, label="requested region"), width, height)


def windows_for(regions: list[Box], width: int, height: int, config: ZoomConfig) -> list[Window]:
    """The crop windows (first image's pixels) of ``regions``, the largest region's first.

    Each region gets its window (:func:`_window`); a region inside a window already made needs
    none, and two regions share one window when it is no larger than their two apart (nearby
    regions are seen together, distant ones each at its own enlargement). At most
    ``max_crops`` windows; a window barely smaller than the image is left out.
    """
    groups: list[tuple[list[Box], Box]] = []
    for region in sorted(regions, key=lambda b: b.area, reverse=True):
        if any(_inside(region, window) for _, window in groups):
            continue
        own = _window([region], width, height, config)
        for index, (members, window) in enumerate(groups):
            joint = _window([*members, region], width, height, config)
            if joint.area <= window.area + own.area:
                groups[index] = ([*members, region], joint)
                break
        else:
            groups.append(([region], own))
    windows = []
    for _, box in groups[: config.max_crops]:
        zoom = width / (box.x1 - box.x0)
        if zoom >= _LEAST_ZOOM:
            windows.append(Window(box, zoom))
    return windows


def _window(regions: list[Box], width: int, height: int, config: ZoomConfig) -> Box:
    """The window showing ``regions`` together: their union with context, framed."""
    return _framed(_padded(union_box(regions), config.context), width, height, config.max_zoom)


def _inside(box: Box, window: Box) -> bool:
    return (
        window.x0 <= box.x0 and window.y0 <= box.y0 and box.x1 <= window.x1 and box.y1 <= window.y1
    )


def _padded(box: Box, context: float) -> Box:
    margin = context * max(box.x1 - box.x0, box.y1 - box.y0, 1.0)
    return replace(box, x0=box.x0 - margin, y0=box.y0 - margin, x1=box.x1 + margin,
                   y1=box.y1 + margin)  # fmt: skip


def _framed(box: Box, width: int, height: int, max_zoom: float) -> Box:
    """``box`` widened around its centre to the image's aspect ratio and at least
    ``1 / max_zoom`` of its sides, then moved (never shrunk) to lie inside the image."""
    aspect = width / height
    w = max(box.x1 - box.x0, (box.y1 - box.y0) * aspect, width / max_zoom)
    w = min(w, float(width))
    h = w / aspect
    cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    x0 = min(max(cx - w / 2, 0.0), width - w)
    y0 = min(max(cy - h / 2, 0.0), height - h)
    return whole_pixels(Box(x0, y0, x0 + w, y0 + h, label=ZOOMED), width, height)


def whole_pixels(box: Box, width: int, height: int) -> Box:
    """``box`` on whole pixels (its size and corner rounded, at least a pixel), inside the
    image: a crop of whole source pixels, told to the judge as it is."""
    w = min(max(round(box.x1 - box.x0), 1), width)
    h = min(max(round(box.y1 - box.y0), 1), height)
    x0 = min(max(round(box.x0), 0), width - w)
    y0 = min(max(round(box.y0), 0), height - h)
    return replace(box, x0=float(x0), y0=float(y0), x1=float(x0 + w), y1=float(y0 + h))


def crop_view(image: Image.Image, window: Box, size: tuple[int, int]) -> Image.Image:
    """The ``window`` of ``image`` (its own pixels) resampled to ``size`` with Lanczos, from
    the full-resolution pixels."""
    box = (window.x0, window.y0, window.x1, window.y1)
    return to_rgb(image).resize(size, Image.Resampling.LANCZOS, box=box)


def view_size(image: Image.Image, config: ZoomConfig) -> tuple[int, int]:
    """The size of an enlarged crop of ``image``: its own, or ``config.size`` on the longer
    side."""
    if config.size is None:
        return image.size
    scale = config.size / max(image.size)
    return max(1, round(image.width * scale)), max(1, round(image.height * scale))


class ZoomTool:
    """The Zoom tool: the region that matters, enlarged from every image of the sub-question.

    See the module notes for which region and how it is framed. Offered by default under the
    ``extended`` method (the paper has no such tool); Difference and Grounding, when Zoom
    needs them to find the region, are those registered, if offered in the run.
    """

    name = "Zoom"
    description = (
        "Crops the region that matters from each image at full resolution and enlarges it, "
        "so a small edit or detail is seen clearly. It enlarges the region the query names "
        "(an object, or a box [x0, y0, x1, y1] in the first image's pixels), else what "
        "changed between the two images. Useful when the change or the object is small."
    )

    async def run(self, ctx: ToolContext) -> ToolResult:
        """Find the region, frame it and crop it from every image the sub-question shows."""
        shown = {role: img for role, img in ctx.question_images().items() if role != "mask"}
        if not shown:
            return ToolResult(tool=self.name, text="Zoom: the sub-question shows no image.")
        first_role, first = next(iter(shown.items()))
        regions, how, found = await self._regions(ctx, shown)
        in_first = [b for role, boxes in regions.items() for b in _to_frame(
            boxes, shown[role].size, first.size)]  # fmt: skip
        config = ctx.config.zoom
        windows = windows_for(in_first, first.width, first.height, config)
        if not windows:
            return ToolResult(
                tool=self.name,
                text=_nothing(how, bool(in_first)),
                boxes=found,
                data={"region_from": how},
            )
        views, boxes = await asyncio.to_thread(_views, ctx, shown, first.size, windows)
        for role, extra in found.items():
            boxes.setdefault(role, [])[:0] = extra
        text = _describe(how, windows, first_role, ctx.config.tool_text == "focus")
        return ToolResult(
            tool=self.name,
            text=text,
            boxes=boxes,
            views=views,
            data={
                "region_from": how,
                "windows": [fmt_box(w.box) for w in windows],
                "zoom": [round(w.zoom, 2) for w in windows],
            },
        )

    async def _regions(
        self, ctx: ToolContext, shown: dict[str, Image.Image]
    ) -> tuple[dict[str, list[Box]], str, dict[str, list[Box]]]:
        """The regions to zoom on by role, where they came from, and those Zoom found itself
        (its evidence besides the windows)."""
        first_role, first = next(iter(shown.items()))
        asked = query_box(ctx.query, first.width, first.height)
        if asked is not None:
            return {first_role: [asked]}, "the requested box", {}
        earlier = {role: boxes for role, boxes in ctx.found.items() if role in shown and boxes}
        if earlier:
            return earlier, "the regions found before", {}
        from cigeval.tools.registry import get_tool

        query = (ctx.query or "").strip()
        use = "Difference" if len(shown) >= 2 and not query else "Grounding"
        if not _offered(ctx, use):
            use = "Difference" if use == "Grounding" and len(shown) >= 2 else ""
            if not use or not _offered(ctx, use):
                return {}, "no offered tool to find it", {}
        result = await get_tool(use).run(replace(ctx, query=query or None))
        found = {
            role: [replace(b, found_by=b.found_by or result.tool) for b in boxes]
            for role, boxes in result.boxes.items()
            if role in shown
        }
        return found, f"the {result.tool} tool", found


def _offered(ctx: ToolContext, name: str) -> bool:
    from cigeval.tools.registry import match_offered_tool, tool_names

    offered = ctx.config.tools if ctx.config.tools is not None else tool_names(ctx.config.method)
    return match_offered_tool(name, offered) is not None


def _to_frame(boxes: list[Box], size: tuple[int, int], frame: tuple[int, int]) -> list[Box]:
    """``boxes`` of an image of ``size`` in the pixels of an image of ``frame``."""
    return [scale_box(b, frame[0] / size[0], frame[1] / size[1]) for b in boxes]


def _views(
    ctx: ToolContext,
    shown: dict[str, Image.Image],
    frame: tuple[int, int],
    windows: list[Window],
) -> tuple[list[ToolView], dict[str, list[Box]]]:
    """Every image's crop of every window (encoded here, in the worker thread), and each
    window in each image's own pixels."""
    views: list[ToolView] = []
    boxes: dict[str, list[Box]] = {}
    for number, window in enumerate(windows, start=1):
        for role, image in shown.items():
            (scaled,) = _to_frame([window.box], frame, image.size)
            box = whole_pixels(scaled, image.width, image.height)
            view = crop_view(image, box, view_size(image, ctx.config.zoom))
            ctx.encode(view)
            caption = (
                f"the {role} image zoomed in on {fmt_box(box)} of its pixels, "
                f"enlarged {window.zoom:.1f}x"
            )
            views.append(ToolView(f"{role} (zoom {number})", role, view, caption))
            boxes.setdefault(role, []).append(box)
    return views, boxes


def _nothing(how: str, found_any: bool) -> str:
    if found_any:
        return (
            f"Zoom: the region from {how} covers most of the image, so there is nothing to "
            "enlarge: judge the whole images."
        )
    return f"Zoom found no region to enlarge ({how}: nothing found); judge the whole images."


def _describe(how: str, windows: list[Window], first_role: str, focus: bool) -> str:
    count = len(windows)
    if focus:
        return (
            f"The last {'image' if count == 1 else 'images'} enlarge the region(s) that matter; "
            "look closely at them."
        )
    listed = "; ".join(f"{fmt_box(w.box)} enlarged {w.zoom:.1f}x" for w in windows)
    return (
        f"Zoom: {count} region{'s' if count != 1 else ''} from {how}, cropped from every image "
        f"at full resolution and shown enlarged after the images. Windows in {first_role} "
        f"pixels: {listed}."
    )
