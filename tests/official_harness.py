"""The official CIGEval client run from the user's clone, its network stubbed, for tests.

Where ``CIGEVAL_OFFICIAL_CLONE`` names a clone of HITsz-TMG/Agentic-CIGEval, the tests run
its own functions (``evaluate.py``'s tool and evaluate passes, ``util.py``'s reading of
replies, ``spear.py``'s counting), defined from the clone's source at test time (nothing of
it is stored here), with the model calls answered by the same scripted replies cigeval gets,
and compare the requests and the scores. Each model call's body is recorded as the official
client would send it (``model`` and ``messages``).
"""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from PIL import Image, ImageOps

CLONE = os.environ.get("CIGEVAL_OFFICIAL_CLONE")
MODEL = "gpt-4o-2024-05-13"

#: cigeval's task -> the official functions' name part, its input prefix, the sample's image
#: roles in the official ``vision_input`` order.
TASKS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "text_guided_ig": ("Text_Guided_IG", "Text Prompt:", ("output",)),
    "mask_guided_ie": ("Mask_Guided_IE", "Editing instruction:", ("source", "output")),
    "text_guided_ie": ("Text_Guided_IE", "Editing instruction:", ("source", "output")),
    "subject_driven_ig": ("Subject_Driven_IG", "Text Prompt:", ("subject", "output")),
    "subject_driven_ie": ("Subject_Driven_IE", "Subject:", ("source", "subject", "output")),
    "multi_concept_ic": ("Multi_Concept_IC", "Text Prompt:", ("subject", "output")),
    "control_guided_ig": ("Control_Guided_IG", "Text Prompt:", ("control", "output")),
}
_FIELD = {"Text Prompt:": "prompt", "Editing instruction:": "instruction", "Subject:": "subject"}


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (the textbook one), standing in for the ``Levenshtein`` package
    the clone's ``check`` imports."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def define(path: Path, names: tuple[str, ...] | None, namespace: dict[str, Any]) -> None:
    """Define the module-level functions ``names`` (all of them for None) of the Python file
    at ``path`` in ``namespace``, and its methods of those names as plain functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (names is None or node.name in names):
            exec(compile(ast.Module([node], []), str(path), "exec"), namespace)


def string_constant(path: Path, name: str) -> str:
    """The string a module assigns to ``name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            value = node.value
            assert isinstance(value, ast.Constant) and isinstance(value.value, str)
            return value.value
    raise LookupError(name)


class OfficialClient:
    """The clone's passes over one sample, each call answered by ``reply(body)``."""

    def __init__(self, root: str | Path, reply: Callable[[dict[str, Any]], str]) -> None:
        self.root = Path(root)
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []
        self.files: dict[str, Any] = {}
        ns: dict[str, Any] = {"__name__": "official_stand_alone"}
        exec((self.root / "agent/prompt_agent.py").read_text("utf-8"), ns)  # strings only
        ns.update(
            json=json,
            re=re,
            os=os,
            base64=base64,
            BytesIO=io.BytesIO,
            Image=Image,
            ImageOps=ImageOps,
            Levenshtein=SimpleNamespace(distance=edit_distance),
            tqdm=lambda items: items,
            print=lambda *args, **kwargs: None,
            sgPrompt=string_constant(self.root / "tools/scene_graph.py", "sgPrompt"),
        )
        define(self.root / "util.py", None, ns)
        define(
            self.root / "agent/openai.py", ("load_image", "encode_pil_image", "prepare_prompt"), ns
        )
        define(self.root / "tools/com.py", ("split2part",), ns)
        define(self.root / "tools/scene_graph.py", ("sg_generate",), ns)
        define(self.root / "evaluate.py", None, ns)
        # the files and the log of the passes stay in memory
        ns["read_json"] = lambda path: json.loads(json.dumps(self.files[path]))
        ns["write_json"] = lambda path, data: self.files.__setitem__(
            path, json.loads(json.dumps(data))
        )
        ns["log_prompt"] = lambda *args: None
        prepare = ns["prepare_prompt"]
        client = self

        class Model:
            def prepare_prompt(self, image_links: Any = None, text_prompt: str = "") -> Any:
                return prepare(self, [] if image_links is None else image_links, text_prompt)

            def get_result(self, prompt: Any) -> str:
                body = {"model": MODEL, "messages": [{"role": "user", "content": prompt}]}
                client.bodies.append(body)
                return client.reply(json.loads(json.dumps(body)))

        ns["agent_run"] = ns["gpt"] = ns["SG_generator"] = Model()
        self.ns = ns
        define(self.root / "spear.py", ("preprocess", "map_to_nearest_higher"), self.ns)

    def judge(self, task: str, fields: dict[str, Any], folder: Path) -> list[Any] | None:
        """Both passes over the sample (its images in ``folder``, two folders deep at least,
        so the clone's ``url2path`` finds them again); its ``score`` list, or None when the
        clone drops the sample."""
        name, prefix, roles = TASKS[task]
        self.ns["Image_task_path"] = str(folder.parent.parent)
        images = fields["images"]
        links = [str(folder / images[role]) for role in roles]
        entry: dict[str, Any] = {
            "prompt_input": f"{prefix} {fields[_FIELD[prefix]]}",
            "vision_input": links,
        }
        if "subject" in fields:
            entry["subject"] = fields["subject"]
        if "concepts" in fields:
            entry["concepts"] = list(fields["concepts"])
        self.files["in"] = {"sample": entry}
        self.ns[f"test_{name}_tool"]("in", "tool", "tool.log")
        self.ns[f"test_{name}_evaluate"]("in", "tool", "eva", "eva.log")
        out = self.files["eva"].get("sample")
        return None if out is None else list(out["score"])

    def value(self, scores: list[Any]) -> float:
        """The sample's score as the clone's analysis counts it (its errors propagate)."""
        (value,) = self.ns["preprocess"]([scores])
        return float(value)


def canonical(bodies: list[dict[str, Any]]) -> list[str]:
    """Request bodies as sorted canonical JSON (the order of concurrent calls aside)."""
    return sorted(json.dumps(b, sort_keys=True) for b in bodies)


#: The scene-graph reply of the scripts: the fenced block's text is what the judge reads.
GRAPH_REPLY = 'Graph:\n```json\n{"objects": ["apple"], "relationships": []}\n```'


class Script:
    """The model's replies, by what a request asks, told apart by the prompt folder both
    sides send (``official-prompts`` from the clone, or from the stand-in): the plan, the
    scene graph, the repair request, or the judge of a sub-question (by its template)."""

    def __init__(
        self,
        prompt_dir: Path,
        plan: str,
        judge: dict[str, str],
        repair: Callable[[str], str] | str = '{"score": "5", "reasoning": "repaired"}',
    ) -> None:
        self.plan = plan
        self.judge = judge
        self.repair = repair if callable(repair) else (lambda _shown, r=repair: r)
        self.graph_prompt = (prompt_dir / "paper_scene_graph.txt").read_text("utf-8")
        self.repair_head = (prompt_dir / "paper_repair.txt").read_text("utf-8").split("{reply}")[0]
        self.templates: dict[str, list[str]] = {}
        for path in sorted(prompt_dir.glob("paper_judge_*.txt")):
            chunks = re.split(r"\{\w+\}", path.read_text("utf-8"))
            self.templates[path.stem] = [c for c in chunks if len(c.strip()) >= 20]

    def kind(self, body: dict[str, Any]) -> tuple[str, str | None]:
        """("plan" | "scene_graph" | "repair" | "judge", the judge template's name)."""
        content = body["messages"][0]["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        if text == self.graph_prompt:
            return "scene_graph", None
        if text.startswith(self.repair_head) and len(content) == 1:
            return "repair", None
        if "### Task:" in text:
            return "plan", None
        for name, chunks in self.templates.items():
            if all(chunk in text for chunk in chunks):
                return "judge", name
        raise AssertionError(f"an unexpected request: {text[:200]!r}")

    def __call__(self, body: dict[str, Any]) -> str:
        kind, template = self.kind(body)
        if kind == "scene_graph":
            return GRAPH_REPLY
        if kind == "plan":
            return self.plan
        if kind == "repair":
            text = body["messages"][0]["content"][0]["text"]
            return self.repair(text[len(self.repair_head) :])
        assert template is not None
        question = next((q for q in self.judge if template.endswith(q)), "*")
        return self.judge.get(question, self.judge.get("*", '{"score": "6", "reasoning": "-"}'))

    def counts(self, bodies: list[dict[str, Any]]) -> dict[str, int]:
        """How many requests of each kind ``bodies`` holds."""
        counted: dict[str, int] = {}
        for body in bodies:
            kind = self.kind(body)[0]
            counted[kind] = counted.get(kind, 0) + 1
        return counted
