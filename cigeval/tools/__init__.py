"""Tools the agent can run on a sub-question's images (paper §3.2) and the tool registry.

Importing this package registers the built-in Grounding, Difference and Scene Graph tools.
OCR is an example of a user tool: ``register_tool(OCRTool())`` (or naming it in
``EvalConfig.tools`` / ``--tools``) makes it available.
Heavy dependencies (torch, transformers, rapidocr) load on a tool's first use, never here.
"""

from collections.abc import Callable, Iterable

from cigeval.tools.base import Box, Tool, ToolCache, ToolContext, ToolResult
from cigeval.tools.boxes import merge_boxes
from cigeval.tools.difference import (
    DifferenceReport,
    DifferenceTool,
    compare_images,
    find_changed_regions,
)
from cigeval.tools.grounding import GroundingDinoDetector, GroundingTool, normalize_query
from cigeval.tools.highlight import highlight
from cigeval.tools.ocr import OCRTool, read_text
from cigeval.tools.registry import get_tool, register_tool, registered_tools, unregister_tool
from cigeval.tools.scene_graph import SceneGraphTool

__all__ = [
    "Box",
    "DifferenceReport",
    "DifferenceTool",
    "GroundingDinoDetector",
    "GroundingTool",
    "OCRTool",
    "SceneGraphTool",
    "Tool",
    "ToolCache",
    "ToolContext",
    "ToolResult",
    "compare_images",
    "find_changed_regions",
    "get_tool",
    "highlight",
    "merge_boxes",
    "normalize_query",
    "read_text",
    "register_builtin_tools",
    "register_tool",
    "registered_tools",
    "resolve_tools",
    "unregister_tool",
]


def register_builtin_tools() -> None:
    """Register Grounding, Difference and Scene Graph under their names.

    Idempotent: a name that is already registered (a built-in from an earlier call, or a
    user's replacement) is left as it is.
    """
    from cigeval.tools.registry import normalize_tool_name

    taken = {normalize_tool_name(tool.name) for tool in registered_tools()}
    for tool in (GroundingTool(), DifferenceTool(), SceneGraphTool()):
        if normalize_tool_name(tool.name) not in taken:
            register_tool(tool)


def resolve_tools(names: Iterable[str] | None) -> list[Tool]:
    """The tools named (any spelling ``get_tool`` accepts), or every registered tool for None.

    Shipped tools that are not registered by default (``OCR``) are registered when named, so
    ``--tools Grounding,OCR`` works from the command line. Unknown names raise ConfigError.
    """
    from cigeval.tools.registry import normalize_tool_name

    if names is None:
        return registered_tools()
    tools = []
    for name in names:
        key = normalize_tool_name(name)
        known = {normalize_tool_name(t.name) for t in registered_tools()}
        if key not in known and key in _OPTIONAL_TOOLS:
            register_tool(_OPTIONAL_TOOLS[key]())
        tools.append(get_tool(name))
    return tools


#: Shipped tools registered only when asked for by name.
_OPTIONAL_TOOLS: dict[str, Callable[[], Tool]] = {"ocr": OCRTool}

register_builtin_tools()
