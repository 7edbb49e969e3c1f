"""``--plugin MODULE``: a tool written in a Python file is used from the command line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cigeval.cli import main
from cigeval.results import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from cigeval.tools import registered_tools, unregister_tool
from tests.cli_support import evaluate_cli

#: A tool module as a user writes it: it registers the tool when imported.
TOOL_MODULE = """
import cigeval


class StampCheck:
    name = "{name}"
    description = "Reads the stamp in the corner of the image."

    async def run(self, ctx):
        width, height = ctx.images["output"].size
        return cigeval.ToolResult(tool=self.name, text=f"STAMP CHECK: {{width}}x{{height}} ok")


cigeval.register_tool(StampCheck())
"""


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    tie = next(s for s in seven_task_samples(tmp_path) if s["id"] == "tie")
    return write_jsonl(tmp_path / "samples.jsonl", [tie])


def _judge_with(server: FakeOpenAIServer, samples: Path, out: Path, *argv: str) -> int:
    return evaluate_cli(server, samples, out, *argv)


@pytest.mark.parametrize("form", ["file", "module"])
def test_a_tool_from_a_plugin_is_offered_run_and_recorded(
    form: str, samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"Stamp Check {form}"
    folder = tmp_path / "plugins"
    folder.mkdir()
    module = f"stamp_tools_{form}"
    (folder / f"{module}.py").write_text(TOOL_MODULE.format(name=name))
    if form == "file":
        plugin = str(folder / f"{module}.py")
    else:
        monkeypatch.chdir(folder)  # a dotted name is found in the current folder
        monkeypatch.setattr(sys, "path", list(sys.path))
        plugin = module
    assert name not in {t.name for t in registered_tools()}
    out = tmp_path / "results.jsonl"
    try:
        with FakeOpenAIServer(rule_judge(tools={"edit_success": name})) as server:
            status = _judge_with(server, samples, out, "--plugin", plugin, "--tools", name)
            texts = [r.texts() for r in server.requests]
    finally:
        unregister_tool(name)
        sys.modules.pop(module, None)
    assert status == 0
    (record,) = read_records(out)
    edit = next(s for s in record["sub_scores"] if s["question_id"] == "edit_success")
    assert edit["tool"] == name and edit["tool_output"].startswith("STAMP CHECK: ")
    plan = next(t for t in texts if any("### Task" in part for part in t))
    assert any(f"1. **{name}**:" in part for part in plan)  # offered to the planner
    assert any("STAMP CHECK: " in part for t in texts for part in t)  # shown to the judge


def test_a_plugin_before_the_command_and_one_after_are_both_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("import builtins\nbuiltins.cigeval_plugin_order = ['first']\n")
    second.write_text("import builtins\nbuiltins.cigeval_plugin_order.append('second')\n")
    try:
        assert main(["--plugin", str(first), "rubrics", "--plugin", str(second)]) == 0
        import builtins

        assert builtins.cigeval_plugin_order == ["first", "second"]  # type: ignore[attr-defined]
    finally:
        import builtins

        vars(builtins).pop("cigeval_plugin_order", None)
    assert "cigeval:" in capsys.readouterr().out  # the rubrics were listed after loading


def test_a_plugin_that_cannot_be_imported_is_exit_2_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "--plugin", "no_such_plugin_module"]) == 2
    err = capsys.readouterr().err
    assert "cigeval tasks: error: --plugin no_such_plugin_module: no module named" in err
    assert main(["tasks", "--plugin", str(tmp_path / "missing.py")]) == 2
    assert "missing.py: no such file" in capsys.readouterr().err
    broken = tmp_path / "broken.py"
    broken.write_text("import cigeval\n\nundefined_name + 1\n")
    assert main(["tasks", "--plugin", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "failed while importing: NameError: name 'undefined_name' is not defined" in err
    assert f"(at {broken}, line 3)" in err
    assert "Traceback" not in err
    assert "cigeval_plugin_broken" not in sys.modules
