"""The tools package: built-ins registered on import, OCR opt-in, no heavy imports."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from cigeval.tools import (
    DifferenceTool,
    GroundingTool,
    OCRTool,
    SceneGraphTool,
    Tool,
    get_tool,
    register_builtin_tools,
    register_tool,
    registered_tools,
    unregister_tool,
)
from cigeval.tools.registry import TOOLS


@pytest.fixture(autouse=True)
def _restore_registry() -> Iterator[None]:
    with TOOLS.scoped():
        yield


def test_builtins_registered_on_import() -> None:
    names = [tool.name for tool in registered_tools()]
    assert {"Grounding", "Difference", "Scene Graph"} <= set(names)
    assert isinstance(get_tool("scene_graph"), SceneGraphTool)
    assert isinstance(get_tool("grounding"), GroundingTool)
    assert isinstance(get_tool("Difference"), DifferenceTool)


def test_register_builtin_tools_is_idempotent_and_keeps_replacements() -> None:
    before = len(registered_tools())
    register_builtin_tools()
    register_builtin_tools()
    assert len(registered_tools()) == before
    mine = GroundingTool()
    register_tool(mine, replace=True)
    register_builtin_tools()
    assert get_tool("Grounding") is mine
    unregister_tool("Difference")
    register_builtin_tools()
    assert isinstance(get_tool("difference"), DifferenceTool)


def test_every_tool_satisfies_the_protocol() -> None:
    for tool in (GroundingTool(), DifferenceTool(), SceneGraphTool(), OCRTool()):
        assert isinstance(tool, Tool)
        assert tool.name and len(tool.description) > 40


def test_ocr_is_opt_in() -> None:
    assert "OCR" not in {tool.name for tool in registered_tools()}
    register_tool(OCRTool())
    assert isinstance(get_tool("ocr"), OCRTool)


def test_import_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, cigeval.tools\n"
        "heavy = [m for m in ('torch', 'transformers', 'rapidocr_onnxruntime', 'onnxruntime')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == ""
