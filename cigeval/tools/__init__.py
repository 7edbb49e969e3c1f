"""Tools the agent can run on a sub-question's images (paper §3.2), and their registry.

Grounding, Difference and Scene Graph are offered by default, and Zoom under the ``extended``
method; OCR is an example of a tool offered only when named (``--tools Grounding,OCR``). A
tool is any object with ``name``, ``description`` and ``async run(ctx) -> ToolResult``; add
one with :func:`register_tool`.
Heavy dependencies (torch, transformers, OpenCV, rapidocr) load on a tool's first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports
from cigeval.tools.base import Box, Tool, ToolCache, ToolContext, ToolResult, ToolView

# Imported here, not lazily: the function shares its name with its module.
from cigeval.tools.highlight import highlight
from cigeval.tools.registry import (
    OFFICIAL_TOOL_NAMES,
    get_tool,
    match_offered_tool,
    register_builtin_tools,
    register_tool,
    registered_tools,
    resolve_tools,
    tool_names,
    unregister_tool,
)

if TYPE_CHECKING:
    from cigeval.tools.boxes import merge_boxes
    from cigeval.tools.difference import (
        DifferenceReport,
        DifferenceTool,
        compare_images,
        find_changed_regions,
    )
    from cigeval.tools.grounding import (
        GroundingDinoDetector,
        GroundingTool,
        best_per_phrase,
        normalize_query,
    )
    from cigeval.tools.ocr import OCRTool, read_text
    from cigeval.tools.scene_graph import SceneGraphTool
    from cigeval.tools.settings import DifferenceConfig, GroundingConfig, ZoomConfig
    from cigeval.tools.zoom import ZoomTool

#: Public names defined in the tool modules, loaded on first access.
_LAZY = {
    "merge_boxes": ".boxes",
    "DifferenceConfig": ".settings",
    "DifferenceReport": ".difference",
    "DifferenceTool": ".difference",
    "compare_images": ".difference",
    "find_changed_regions": ".difference",
    "GroundingConfig": ".settings",
    "GroundingDinoDetector": ".grounding",
    "GroundingTool": ".grounding",
    "best_per_phrase": ".grounding",
    "normalize_query": ".grounding",
    "OCRTool": ".ocr",
    "read_text": ".ocr",
    "SceneGraphTool": ".scene_graph",
    "ZoomConfig": ".settings",
    "ZoomTool": ".zoom",
}

__all__ = [
    "OFFICIAL_TOOL_NAMES",
    "Box",
    "DifferenceConfig",
    "DifferenceReport",
    "DifferenceTool",
    "GroundingConfig",
    "GroundingDinoDetector",
    "GroundingTool",
    "OCRTool",
    "SceneGraphTool",
    "Tool",
    "ToolCache",
    "ToolContext",
    "ToolResult",
    "ToolView",
    "ZoomConfig",
    "ZoomTool",
    "best_per_phrase",
    "compare_images",
    "find_changed_regions",
    "get_tool",
    "highlight",
    "match_offered_tool",
    "merge_boxes",
    "normalize_query",
    "read_text",
    "register_builtin_tools",
    "register_tool",
    "registered_tools",
    "resolve_tools",
    "tool_names",
    "unregister_tool",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
