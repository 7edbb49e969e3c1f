"""The tool registry: the tools the planner may choose, by name.

Grounding, Difference and Scene Graph are registered (lazily: nothing heavy loads until a tool
is used) and offered by default; so is Zoom, under the ``extended`` method only (the paper has
no such tool: :data:`EXTENDED_TOOLS`). Shipped tools that are offered only on request (OCR) join the
registry the first time they are named, e.g. ``--tools Grounding,OCR``. Users add their own
with :func:`register_tool`, and plugin packages through the ``cigeval.tools`` entry point.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError
from cigeval.registry import Registry, load_object, normalize_name
from cigeval.tools.base import Tool

#: The tools offered by default, as lazy import paths.
BUILTIN_TOOLS: dict[str, str] = {
    "Grounding": "cigeval.tools.grounding:GroundingTool",
    "Difference": "cigeval.tools.difference:DifferenceTool",
    "Scene Graph": "cigeval.tools.scene_graph:SceneGraphTool",
    "Zoom": "cigeval.tools.zoom:ZoomTool",
}
#: Built-in tools the ``paper`` method does not offer by default (the paper has no such tool):
#: named in ``--tools`` they are offered, and ``--tool-use official`` does not run them.
EXTENDED_TOOLS: tuple[str, ...] = ("Zoom",)
#: Shipped tools registered only when asked for by name.
ON_REQUEST_TOOLS: dict[str, str] = {"OCR": "cigeval.tools.ocr:OCRTool"}
#: The names the official CIGEval code's planner writes, and the tools they stand for here
#: (Highlight grounds the query and dims the rest; MaskFocus highlights the difference).
OFFICIAL_TOOL_NAMES: dict[str, str] = {
    "Highlight": "Grounding",
    "MaskFocus": "Difference",
    "SceneGraph": "Scene Graph",
}


def _as_tool(item: object) -> Tool:
    if isinstance(item, type):
        item = item()
    if not isinstance(item, Tool):
        raise ConfigError(f"{item!r} is not a Tool: it needs name, description and async run()")
    return item


TOOLS: Registry[Tool] = Registry("tool", entry_point_group="cigeval.tools", coerce=_as_tool)


def register_tool(tool: Tool, *, replace: bool = False) -> Tool:
    """Make ``tool`` available to the planner under ``tool.name`` (offered by default)."""
    checked = _as_tool(tool)
    return TOOLS.register(checked.name, checked, replace=replace)


def unregister_tool(name: str) -> None:
    """Remove a tool (no error if absent)."""
    TOOLS.unregister(name)


def register_builtin_tools() -> None:
    """Register Grounding, Difference, Scene Graph and Zoom where their names are free.

    Idempotent: a name that is already registered (a built-in from an earlier call, or a
    user's replacement) is left as it is.
    """
    for name, path in BUILTIN_TOOLS.items():
        TOOLS.register_default(name, path)


def get_tool(name: str) -> Tool:
    """The tool registered as ``name`` (any spelling); on-request tools are registered here."""
    if name not in TOOLS:
        shipped = {normalize_name(k): v for k, v in ON_REQUEST_TOOLS.items()}.get(
            normalize_name(name)
        )
        if shipped is None:
            choices = [*TOOLS.names(), *(n for n in ON_REQUEST_TOOLS if n not in TOOLS)]
            raise ConfigError(f"unknown tool {name!r}; choose one of: {', '.join(choices)}")
        register_tool(_as_tool(load_object(shipped)))
    return TOOLS.get(name)


def tool_names(method: str | None = None) -> list[str]:
    """Names of the tools offered when no tool list is given: every registered tool, less
    :data:`EXTENDED_TOOLS` under the ``paper`` method."""
    names = TOOLS.names()
    if method == "paper":
        extended = {normalize_name(n) for n in EXTENDED_TOOLS}
        names = [n for n in names if normalize_name(n) not in extended]
    return names


def registered_tools(method: str | None = None) -> list[Tool]:
    """The tools offered when no tool list is given (see :func:`tool_names`), in
    registration order."""
    return [TOOLS.get(name) for name in tool_names(method)]


def match_offered_tool(name: str, offered: Sequence[str]) -> str | None:
    """The offered tool a model means by ``name``, or None when none of them.

    Any spelling of an offered name matches; so does an official-code name
    (:data:`OFFICIAL_TOOL_NAMES`) whose tool is offered, unless a tool of that very name is
    offered itself.
    """
    by_key = {normalize_name(n): n for n in offered}
    key = normalize_name(name)
    if key in by_key:
        return by_key[key]
    aliases = {normalize_name(k): normalize_name(v) for k, v in OFFICIAL_TOOL_NAMES.items()}
    target = aliases.get(key)
    return by_key.get(target) if target is not None else None


def why_not_offered(name: str, offered: Sequence[str]) -> str:
    """Why ``name`` matches no offered tool: unknown, or known but not offered in this run."""
    choices = ", ".join(offered) or "no tool"
    aliases = {normalize_name(k): v for k, v in OFFICIAL_TOOL_NAMES.items()}
    meant = aliases.get(normalize_name(name), name)
    if meant in TOOLS or normalize_name(meant) in map(normalize_name, ON_REQUEST_TOOLS):
        named = (
            f"{name!r} ({meant})" if normalize_name(meant) != normalize_name(name) else repr(name)
        )
        option = in_callers_words("--tools", "tools=")
        return (
            f"the judge chose the tool {named}, which is not offered in this run "
            f"(offered: {choices}; {option} sets the tools offered)"
        )
    return f"unknown tool {name!r} (offered: {choices})"


def resolve_tools(names: Iterable[str] | None, method: str | None = None) -> list[Tool]:
    """The tools named (any spelling), or for None the tools offered by default under
    ``method`` (:func:`tool_names`).

    Unknown names raise ConfigError listing the choices.
    """
    if names is None:
        return registered_tools(method)
    return [get_tool(name) for name in names]


register_builtin_tools()
