"""A ``paper`` run sends what the official CIGEval client sends (issue 30).

Two checks on the JSON bodies a fake OpenAI server receives, task by task:

- always: each body against a description of the official request (only ``model`` and
  ``messages``; one user message; all text first, then the images with no text between
  them; the tool sentence inside the rules, before the objective; the scene graph as the
  model wrote it; one scene-graph call per image per sub-question);
- where ``CIGEVAL_OFFICIAL_CLONE`` names a clone of HITsz-TMG/Agentic-CIGEval: with the prompt
  dir ``cigeval official-prompts`` writes from it, the bodies equal, byte for byte after key
  order, the bodies built here from the clone's own prompt strings and functions (read with
  ``ast``, the clone's prompt module executed alone: it only assigns strings) in the order
  its ``evaluate.py`` uses them. Images a tool made (Highlight, MaskFocus) are compared by
  place only: their bytes have tests of their own (tests/tools/).
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
from typing import Any

import pytest
from PIL import Image, ImageOps

from cigeval import Evaluator, RunConfig
from cigeval.cli.main import main
from cigeval.sample import sample_from_dict
from cigeval.tasks import TASK_IDS
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.tools import GroundingTool
from cigeval.tools.registry import TOOLS
from tests.judge_view import RecordingDetector, fidelity_samples

CLONE = os.environ.get("CIGEVAL_OFFICIAL_CLONE")
MODEL = "gpt-4o-2024-05-13"
NO_CACHE = RunConfig(use_cache=False, preflight=False)
#: A scene-graph reply: the fenced block's text (newlines included) is what the judge reads.
GRAPH_BLOCK = '\n{"objects": ["apple"], "attributes": {"apple": ["red"]}, "relationships": []}\n'
GRAPH_REPLY = "Here it is:\n```json" + GRAPH_BLOCK + "```\nDone."
TOOL_IMAGE = "data:image/jpeg;base64,<an image the tool made>"
#: The official tool name -> whether it runs in each task (the official evaluate pass).
TOOL_CHOICES = ("None", "Highlight", "SceneGraph", "MaskFocus")


def runs(tool: str, task: str) -> bool:
    """Whether the official evaluate pass runs ``tool`` in ``task``."""
    return tool in ("Highlight", "SceneGraph") or (tool == "MaskFocus" and task == "mask_guided_ie")


def is_plan(text: str) -> bool:
    return "### Task:" in text


def is_scene_graph(text: str) -> bool:
    return "scene graph" in text.lower() and "RULES:" not in text


def replier(tool: str) -> Callable[[dict[str, Any]], str]:
    """The stub model: a plan choosing ``tool`` for tasks 1 and 2, a graph, a score."""

    def reply(body: dict[str, Any]) -> str:
        text = request_text(body)
        if is_plan(text) or "### Questions" in text:
            if "### Questions" in text:  # cigeval's layout (extended)
                return rule_judge()(body)
            entries = [
                {"task_id": str(i), "reasoning": "-", "used": "yes", "tool": tool}
                for i in (1, 2)
                if f"Task {i}:" in text
            ]
            return json.dumps(entries)
        if is_scene_graph(text):
            return GRAPH_REPLY
        return '{"score": "7", "reasoning": "fine"}'

    return reply


def cigeval_bodies(
    folder: Path, task: str, fields: dict[str, Any], tool: str, **config: Any
) -> list[dict[str, Any]]:
    """The bodies of one ``paper`` run of the sample, in the order they arrived."""
    with FakeOpenAIServer(replier(tool)) as server, TOOLS.scoped():
        TOOLS.register("Grounding", GroundingTool(detector=RecordingDetector()), replace=True)  # type: ignore[arg-type]
        sample = sample_from_dict({"id": task, "task": task, **fields}, base_dir=folder)
        evaluator = Evaluator(
            f"openai:{MODEL}", base_url=server.base_url, run_config=NO_CACHE, **config
        )
        score = evaluator.evaluate(sample)
        bodies = [r.body for r in server.requests]
    assert score.status == "ok", score.error
    return bodies


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("official")
    return folder, fidelity_samples(folder)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


# ------------------------------------------------------------------ the description, always


@pytest.mark.parametrize("tool", TOOL_CHOICES)
@pytest.mark.parametrize("task", TASK_IDS)
def test_each_request_is_laid_out_as_the_official_one(samples, task: str, tool: str) -> None:
    folder, by_task = samples
    bodies = cigeval_bodies(folder, task, by_task[task], tool)
    graphs = judges = 0
    for body in bodies:
        # no sampling parameter: the provider's defaults, as the official client
        assert set(body) == {"model", "messages"}, sorted(body)
        (message,) = body["messages"]
        assert message["role"] == "user"
        kinds = [part["type"] for part in message["content"]]
        assert kinds[0] == "text" and set(kinds[1:]) == {"image_url"}, kinds
        text = message["content"][0]["text"]
        assert "Image 1" not in text and "[output]" not in text  # no labels
        if is_scene_graph(text):
            graphs += 1
            assert len(kinds) == 2  # one image per scene-graph call
        elif not is_plan(text):
            judges += 1
            rules, objective = text.index("RULES:"), text.index("Your task is to judge")
            if runs(tool, task) and tool != "SceneGraph":
                assert rules < text.index("Look closely at the highlighted") < objective
            if runs(tool, task) and tool == "SceneGraph":
                # the graph as written: the fenced block's text, newlines included
                assert rules < text.index(GRAPH_BLOCK) < objective
            if not runs(tool, task):
                assert GRAPH_BLOCK not in text and "highlighted" not in text
            assert '"score" : "..."' in text  # the score asked for as a string
    questions = len(__import__("cigeval").tasks.get_task(task).sub_questions)
    assert judges == questions
    shown = sum(len(b["messages"][0]["content"]) - 1 for b in bodies if is_plan_or_judge(b))
    assert shown > 0
    if tool == "SceneGraph":
        # asked anew for every image of every sub-question, as the official code does
        expected = sum(
            len(q.image_roles) for q in __import__("cigeval").tasks.get_task(task).sub_questions
        )
        assert graphs == expected
    else:
        assert graphs == 0


def is_plan_or_judge(body: dict[str, Any]) -> bool:
    return not is_scene_graph(body["messages"][0]["content"][0]["text"])


def test_extended_keeps_cigevals_layout_and_sampling(samples) -> None:
    folder, by_task = samples
    bodies = cigeval_bodies(
        folder, "text_guided_ie", by_task["text_guided_ie"], "SceneGraph", method="extended"
    )
    judge = [b for b in bodies if b["messages"][0]["role"] == "system"]
    assert judge and all(b["temperature"] == 0 and b["max_tokens"] == 1024 for b in bodies)
    assert all(b["seed"] == 0 for b in bodies)
    user = judge[0]["messages"][1]["content"]
    assert any(p.get("text", "").startswith("Image 1:") for p in user)


def test_given_sampling_settings_are_sent(samples) -> None:
    folder, by_task = samples
    bodies = cigeval_bodies(
        folder, "text_guided_ig", by_task["text_guided_ig"], "None", temperature=0.5, seed=3
    )
    assert all(b["temperature"] == 0.5 and b["seed"] == 3 for b in bodies)
    assert all("max_tokens" not in b for b in bodies)


# ------------------------------------------------------------------ the clone, where given


def _functions(path: Path, names: tuple[str, ...], namespace: dict[str, Any]) -> None:
    """Define the functions ``names`` of the file at ``path`` (methods too) in ``namespace``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            exec(compile(ast.Module([node], []), str(path), "exec"), namespace)


def _data_uri(image: Image.Image) -> str:
    stream = io.BytesIO()
    image.save(stream, format="JPEG")
    return "data:image/jpeg;base64," + base64.b64encode(stream.getvalue()).decode()


class Official:
    """The clone's prompts and functions, and the requests its evaluate pass would send."""

    def __init__(self, root: Path) -> None:
        self.prompts: dict[str, Any] = {}
        exec(
            compile((root / "agent/prompt_agent.py").read_text("utf-8"), "prompt_agent", "exec"),
            self.prompts,
        )
        graph_tree = ast.parse((root / "tools/scene_graph.py").read_text("utf-8"))
        self.sg_prompt = next(
            n.value.value
            for n in graph_tree.body
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "sgPrompt"
        )
        self.ns: dict[str, Any] = {"re": re, "json": json, "sg_generate": self._sg_generate}
        _functions(root / "util.py", ("clean_text", "prompt_format", "toString"), self.ns)
        _functions(root / "agent/openai.py", ("prepare_prompt",), self.ns)
        _functions(root / "evaluate.py", ("get_tool_text",), self.ns)
        self.bodies: list[dict[str, Any]] = []

    def send(self, links: list[str], text: str) -> None:
        content = self.ns["prepare_prompt"](None, links, text)
        self.bodies.append({"model": MODEL, "messages": [{"role": "user", "content": content}]})

    def _sg_generate(self, link: str) -> str:
        self.send([link], self.sg_prompt)
        return str(self.ns["clean_text"](GRAPH_REPLY))

    def judge(
        self, name: str, values: list[tuple[str, str]], links: list[str], tool: str, task: str
    ) -> None:
        tool = tool if runs(tool, task) else "None"
        text = self.prompts[name]
        for key, value in values:
            text = text.replace("{" + key + "}", value)
        text = text.replace("{tool_text}", self.ns["get_tool_text"](tool, links, None))
        shown = [TOOL_IMAGE] * len(links) if tool in ("Highlight", "MaskFocus") else links
        self.send(shown, text)


def official_bodies(
    root: Path, task: str, fields: dict[str, Any], folder: Path, tool: str
) -> list[dict[str, Any]]:
    """The official evaluate pass's requests for the sample, from the clone (evaluate.py)."""
    off = Official(root)
    p = off.prompts

    def uri(name: str) -> str:
        with Image.open(folder / fields["images"][name]) as image:
            return _data_uri(ImageOps.exif_transpose(image).convert("RGB"))

    text, instruction, subject = (
        fields.get("prompt", ""),
        fields.get("instruction", ""),
        fields.get("subject", ""),
    )

    def plan(prefix: str, value: tuple[str, str], links: list[str], tasks: int = 2) -> None:
        rule = p[f"{prefix}_Rule"].replace("{" + value[0] + "}", value[1])
        described = rule + "".join(p[f"{prefix}_Task_{i}"] for i in range(1, tasks + 1))
        off.send(links, p["Tool_Decide"].replace("{task}", described))

    if task in ("text_guided_ie", "mask_guided_ie"):
        prefix = {"text_guided_ie": "Text_Guided_IE", "mask_guided_ie": "Mask_Guided_IE"}[task]
        links = [uri("source"), uri("output")]
        plan(prefix, ("instruction", instruction), links)
        for n in (1, 2):
            off.judge(
                f"{prefix}_Task_{n}_evaluation", [("instruction", instruction)], links, tool, task
            )
    elif task == "subject_driven_ie":
        plan(
            "Subject_Driven_IE",
            ("subject", subject),
            [uri("source"), uri("subject"), uri("output")],
        )
        off.judge(
            "Subject_Driven_IE_Task_1_evaluation",
            [("subject", subject)],
            [uri("subject"), uri("output")],
            tool,
            task,
        )
        off.judge(
            "Subject_Driven_IE_Task_2_evaluation", [], [uri("source"), uri("output")], tool, task
        )
    elif task == "multi_concept_ic":
        plan("Multi_Concept_IC", ("text", text), [uri("subject"), uri("output")])
        with Image.open(folder / fields["images"]["subject"]) as pair:
            w, h = pair.width, pair.height
            halves = [
                _data_uri(pair.crop((0, 0, w * 0.5, h))),
                _data_uri(pair.crop((w * 0.5, 0, w, h))),
            ]
        for half, concept in zip(halves, fields["concepts"], strict=True):
            off.judge(
                "Multi_Concept_IC_Task_1_evaluation",
                [("text", text), ("subject", concept)],
                [half, uri("output")],
                tool,
                task,
            )
        off.judge(
            "Multi_Concept_IC_Task_2_evaluation", [("text", text)], [uri("output")], tool, task
        )
    elif task == "text_guided_ig":
        plan("Text_Guided_IG", ("text", text), [uri("output")], tasks=1)
        off.judge("Text_Guided_IG_Task_1_evaluation", [("text", text)], [uri("output")], tool, task)
    elif task == "control_guided_ig":
        plan("Control_Guided_IG", ("text", text), [uri("control"), uri("output")])
        off.judge(
            "Control_Guided_IG_Task_1_evaluation", [], [uri("control"), uri("output")], tool, task
        )
        off.judge(
            "Control_Guided_IG_Task_2_evaluation", [("text", text)], [uri("output")], tool, task
        )
    elif task == "subject_driven_ig":
        plan("Subject_Driven_IG", ("text", text), [uri("subject"), uri("output")])
        off.judge(
            "Subject_Driven_IG_Task_1_evaluation",
            [("subject", subject)],
            [uri("subject"), uri("output")],
            tool,
            task,
        )
        off.judge(
            "Subject_Driven_IG_Task_2_evaluation", [("text", text)], [uri("output")], tool, task
        )
    return off.bodies


def _tool_images_hidden(body: dict[str, Any], tool: str, task: str) -> dict[str, Any]:
    """``body`` with the images a tool made replaced by :data:`TOOL_IMAGE`."""
    content = body["messages"][0]["content"]
    text = content[0]["text"]
    if tool in ("Highlight", "MaskFocus") and runs(tool, task) and "RULES:" in text:
        for part in content[1:]:
            part["image_url"]["url"] = TOOL_IMAGE
    return body


def _canonical(bodies: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(b, sort_keys=True) for b in bodies)


@pytest.mark.skipif(
    not CLONE, reason="set CIGEVAL_OFFICIAL_CLONE to a clone of HITsz-TMG/Agentic-CIGEval"
)
@pytest.mark.parametrize("tool", TOOL_CHOICES)
@pytest.mark.parametrize("task", TASK_IDS)
def test_with_the_official_prompts_the_requests_are_the_official_ones(
    samples, tmp_path: Path, task: str, tool: str
) -> None:
    assert CLONE is not None
    folder, by_task = samples
    prompt_dir = tmp_path / "prompts"
    assert main(["official-prompts", CLONE, "-o", str(prompt_dir)]) == 0
    fields = by_task[task]
    ours = cigeval_bodies(folder, task, fields, tool, prompt_dir=str(prompt_dir))
    ours = [_tool_images_hidden(b, tool, task) for b in ours]
    theirs = official_bodies(Path(CLONE), task, fields, folder, tool)
    assert _canonical(ours) == _canonical(theirs)


def test_official_prompts_refuses_a_folder_that_is_not_the_official_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["official-prompts", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    assert "is not the official CIGEval code" in capsys.readouterr().err
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "prompt_agent.py").write_text('Tool_Decide = "x {task}"\n')
    (tmp_path / "evaluate.py").write_text("def get_tool_text(tool, links, log):\n    return ''\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "scene_graph.py").write_text("sgPrompt = 'graph'\n")
    (tmp_path / "util.py").write_text("def GPTResponse2JSON(response):\n    return response\n")
    assert main(["official-prompts", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "lacks prompts the paper layout needs" in err and "Text_Guided_IE_Rule" in err
    assert "Tool_Decide's list of the tools" in err and "repair prompt (util.py)" in err


def test_a_paper_run_whose_judge_is_not_gpt4o_says_where_the_papers_graphs_came_from(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from cigeval._warn_once import forget_warnings
    from cigeval.backends import ScriptedBackend

    def warnings() -> list[str]:
        return [
            r.getMessage() for r in caplog.records if "scene graphs came from" in r.getMessage()
        ]

    with caplog.at_level("WARNING"):
        for _ in range(3):  # said once per process, not once per Evaluator
            Evaluator(ScriptedBackend(rule_judge()), run_config=NO_CACHE)
    (warning,) = warnings()
    # in Python's words
    assert "scene_graph_model='openai:gpt-4o-2024-05-13'" in warning and "--" not in warning
    caplog.clear()
    forget_warnings()
    with caplog.at_level("WARNING"):
        Evaluator(ScriptedBackend(rule_judge()), run_config=NO_CACHE, method="extended")
        Evaluator(ScriptedBackend(rule_judge()), run_config=NO_CACHE, tools=("Grounding",))
        Evaluator(f"openai:{MODEL}", base_url="http://127.0.0.1:9/v1", run_config=NO_CACHE)
    assert warnings() == []
