"""Scene Graph: an LMM describes each image as JSON objects, attributes and relations.

Following the paper (§3.2, compositional chain-of-thought prompting), an LMM writes the
graph: the judge, or the model named by ``EvalConfig.scene_graph_model`` (the paper used
GPT-4o scene graphs for every backbone). ``scene_graph_calls="per_question"`` (the paper's
method) asks anew for every sub-question, as the official code does;
``per_image`` once per distinct image per sample: sub-questions that show the same image
share the graph, even when they run at the same time. The judge reads the graph as the model
wrote it (``scene_graph_text="as_written"``: the text of the reply's json-fenced block, else
the whole reply, as the official code's ``clean_text``) or re-written as indented JSON.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

from PIL import Image

from cigeval.errors import ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.parsing import extract_json as parse_json
from cigeval.prompts import render
from cigeval.prompts.exact import fill
from cigeval.session import PARSE_IN_THREAD_CHARS
from cigeval.tools._memo import run_once
from cigeval.tools.base import ToolContext, ToolResult

#: The ``purpose`` of the model calls this tool makes (it appears in the trace).
PURPOSE = "scene_graph"
#: The prompt templates in ``cigeval/prompts``, by ``EvalConfig.scene_graph_prompt``.
TEMPLATES = {"paper": "scene_graph.j2", "extended": "scene_graph_extended.j2"}
#: The paper method's template (kept under its old name for callers that import it).
TEMPLATE = TEMPLATES["paper"]


#: The paper layout's scene-graph request (an exact-text template, :mod:`cigeval.prompts.exact`).
OFFICIAL_TEMPLATE = "paper_scene_graph"
_FENCED_JSON = re.compile(r"```json(.*?)```", re.DOTALL)


def as_written(reply: str) -> str:
    """The graph as the official code passes it on: the text inside the first json-fenced
    block (its newlines included), else the whole reply."""
    match = _FENCED_JSON.search(reply)
    return match.group(1) if match else reply


def json_or_none(text: str) -> Any | None:
    """The first JSON object or array in a model reply, or ``None`` when there is none."""
    try:
        return parse_json(text)
    except ParseError:
        return None


@dataclass(frozen=True)
class SceneGraph:
    """One image's scene graph: ``graph`` is the parsed JSON, or None when the reply was not
    JSON (``raw`` always holds the reply as written)."""

    raw: str
    graph: Any | None

    def as_text(self, form: str = "json") -> str:
        """Pretty JSON when parsed, else the raw reply; under ``form="as_written"`` the graph
        as the official code passes it (:func:`as_written`)."""
        if form == "as_written":
            return as_written(self.raw)
        if self.graph is None:
            return self.raw.strip()
        return json.dumps(self.graph, indent=2, ensure_ascii=False)


class SceneGraphTool:
    """The Scene Graph tool: a structured description of each image the sub-question shows.

    The scene-graph model (the judge unless ``scene_graph_model`` names another) writes the
    graph from ``cigeval/prompts/scene_graph.j2`` (the paper's request) or
    ``scene_graph_extended.j2`` (``scene_graph_prompt="extended"``); a file of that name in
    ``--prompt-dir`` replaces it. Nothing is highlighted; the observation lists each image's
    graph under its role.
    """

    name = "Scene Graph"
    description = (
        "Describes each image as a scene graph in JSON: the objects, their attributes "
        "(colour, count, material, state) and the relationships between them. Useful for "
        "questions about several objects, counts, attributes or spatial relations."
    )
    #: The paper's description, shown to the planner under ``planner_prompt="paper"``.
    paper_description = (
        "Gives overall information about an image as a scene graph (its objects, their "
        "attributes and relationships)."
    )

    async def run(self, ctx: ToolContext) -> ToolResult:
        """Get (or reuse) the scene graph of every image the sub-question shows."""
        shown = {role: img for role, img in ctx.question_images().items() if role != "mask"}
        if not shown:
            return ToolResult(tool=self.name, text="This sub-question shows no image to describe.")
        found = await asyncio.gather(*(scene_graph(ctx, image) for image in shown.values()))
        graphs = dict(zip(shown, found, strict=True))
        form = ctx.config.scene_graph_text
        sections = []
        for role, graph in graphs.items():
            head = f"Scene graph of the {role} image:"
            if graph.graph is None and form == "json":
                head = f"Scene graph of the {role} image (the reply was not JSON; as written):"
            sections.append(f"{head}\n{graph.as_text(form)}")
        return ToolResult(
            tool=self.name,
            text="\n\n".join(sections),
            data={
                "scene_graphs": {role: g.graph for role, g in graphs.items()},
                "parsed": {role: g.graph is not None for role, g in graphs.items()},
                # what the official layout puts in the judge's prompt, in the images' order
                "scene_graph_texts": {role: g.as_text(form) for role, g in graphs.items()},
            },
        )


async def scene_graph(ctx: ToolContext, image: Image.Image) -> SceneGraph:
    """The scene graph of ``image``: asked anew (``scene_graph_calls="per_question"``), or
    once per sample, memoised in ``ctx.memo`` by the image's content hash, so the same image
    seen by several sub-questions (or under two roles) costs one call.

    Under ``request_layout="official"`` the request is the paper layout's template
    (``paper_scene_graph.txt``) then the image; else ``scene_graph_prompt``'s template.
    """
    encoded = ctx.encode(image)
    call = ctx.call_scene_graph_model or ctx.call_model

    async def ask() -> SceneGraph:
        if ctx.config.request_layout == "official":
            prompt = fill(OFFICIAL_TEMPLATE, (), ctx.config.prompt_dir)
        else:
            template = TEMPLATES[ctx.config.scene_graph_prompt]
            prompt = render(template, prompt_dir=ctx.config.prompt_dir)
        message = Message("user", (TextPart(prompt), ImagePart(encoded, "image")))
        reply = await call(PURPOSE, [message])
        if len(reply) > PARSE_IN_THREAD_CHARS:  # a long reply is parsed off the event loop
            return SceneGraph(raw=reply, graph=await asyncio.to_thread(json_or_none, reply))
        return SceneGraph(raw=reply, graph=json_or_none(reply))

    if ctx.config.scene_graph_calls == "per_question":
        return await ask()
    return await run_once(ctx.memo, f"scene_graph:{encoded.sha256}", ask)
