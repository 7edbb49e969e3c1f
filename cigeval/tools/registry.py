"""A registry of tools by name; users add their own with :func:`register_tool`."""

from __future__ import annotations

import re

from cigeval.errors import ConfigError
from cigeval.tools.base import Tool

_TOOLS: dict[str, Tool] = {}


def normalize_tool_name(name: str) -> str:
    """Case-, space- and underscore-insensitive key: 'Scene Graph' == 'scene_graph'."""
    return re.sub(r"[\s_\-]+", "", name).lower()


def register_tool(tool: Tool, *, replace: bool = False) -> Tool:
    """Make ``tool`` available to the planner under ``tool.name``."""
    if not isinstance(tool, Tool):
        raise ConfigError(f"{tool!r} is not a Tool: it needs name, description and async run()")
    key = normalize_tool_name(tool.name)
    if key in _TOOLS and not replace:
        raise ConfigError(f"a tool named {tool.name!r} is already registered (pass replace=True)")
    _TOOLS[key] = tool
    return tool


def unregister_tool(name: str) -> None:
    """Remove a tool (no error if absent)."""
    _TOOLS.pop(normalize_tool_name(name), None)


def get_tool(name: str) -> Tool:
    """The tool registered under ``name`` (any spelling accepted by normalize_tool_name)."""
    try:
        return _TOOLS[normalize_tool_name(name)]
    except KeyError:
        known = ", ".join(t.name for t in _TOOLS.values())
        raise ConfigError(f"unknown tool {name!r}; registered tools: {known}") from None


def registered_tools() -> list[Tool]:
    """All registered tools in registration order."""
    return list(_TOOLS.values())
