"""A stand-in for a clone of the official CIGEval code, for tests that need one offline.

It has the official code's files, variable and function names (what ``cigeval
official-prompts`` reads) but holds cigeval's own paraphrases (the built-in ``paper_*.txt``),
never the official sentences: ``official-prompts`` run on it writes a folder whose templates
equal the built-in ones, with the manifest of an official set.
"""

from __future__ import annotations

from pathlib import Path

import cigeval
from cigeval.prompts import paper_templates as names
from cigeval.prompts.official_source import JUDGE_PROMPTS, PLAN_PARTS

BUILTIN = Path(cigeval.__file__).parent / "prompts"


def builtin(name: str) -> str:
    """The text of a built-in exact-text template."""
    return (BUILTIN / f"{name}.txt").read_text("utf-8")


def write_stand_in(folder: Path) -> Path:
    """Write the stand-in clone into ``folder``; returns ``folder``."""
    lines = "\n".join(
        names.tool_line(n, tool, builtin(names.PLANNER_TOOL[tool]))
        for n, tool in enumerate(names.OFFICIAL_TOOLS, start=1)
    )
    planner = builtin(names.PLANNER).replace("{tools}", lines)
    planner = planner.replace("{tool_choices}", " or ".join(names.OFFICIAL_TOOLS))
    assigned = {"Tool_Decide": planner}
    for task, parts in PLAN_PARTS.items():
        assigned[parts[0]] = builtin(names.plan_template(task))
        assigned.update({part: "" for part in parts[1:]})
    for (task, question), variable in JUDGE_PROMPTS.items():
        assigned.setdefault(variable, builtin(names.judge_template(task, question)))
    (folder / "agent").mkdir(parents=True, exist_ok=True)
    (folder / "tools").mkdir(exist_ok=True)
    source = "".join(f"{name} = {text!r}\n" for name, text in assigned.items())
    (folder / "agent" / "prompt_agent.py").write_text(source, "utf-8")
    (folder / "evaluate.py").write_text(
        "def get_tool_text(tool, img_links, log_path):\n"
        f"    if tool == 'Highlight':\n        return {builtin(names.FOCUS)!r}\n"
        f"    text = {builtin(names.TWO_SCENE_GRAPHS)!r}\n"
        f"    text = {builtin(names.ONE_SCENE_GRAPH)!r}\n"
        "    return text\n",
        "utf-8",
    )
    (folder / "tools" / "scene_graph.py").write_text(
        f"sgPrompt = {builtin(names.SCENE_GRAPH)!r}\n", "utf-8"
    )
    repair = builtin(names.REPAIR).replace("{reply}", "{json_string}")
    (folder / "util.py").write_text(
        f"def GPTResponse2JSON(response):\n    json_string = response\n    prompt = f{repair!r}\n",
        "utf-8",
    )
    return folder


def paper_prompt_dir(folder: Path, **overrides: str) -> Path:
    """A ``--prompt-dir`` for the paper layout: every built-in paper template copied into
    ``folder``, then the ``overrides`` (template name -> text) written over them."""
    folder.mkdir(parents=True, exist_ok=True)
    for template in BUILTIN.glob("paper_*.txt"):
        (folder / template.name).write_bytes(template.read_bytes())
    for name, text in overrides.items():
        (folder / f"{name}.txt").write_text(text, "utf-8")
    return folder
