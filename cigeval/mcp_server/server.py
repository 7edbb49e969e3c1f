"""The MCP server (the official ``mcp`` SDK, imported with this module): three tools over
:class:`~cigeval.mcp_server.tools.JudgeTools`, served over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from cigeval._version import __version__
from cigeval.errors import CigevalError
from cigeval.mcp_server.results import JudgeResult, ProbeSummary, TaskList
from cigeval.mcp_server.settings import McpConfig
from cigeval.mcp_server.tools import JudgeTools
from cigeval.probes import kind_names

INSTRUCTIONS = (
    "cigeval judges AI-generated and AI-edited images the way the CIGEval paper does: an "
    "image model (the judge) answers each sub-question of a task with a score from 0 to 10, "
    "looking at the images and at what tools (Grounding, Difference, Highlight, Scene Graph) "
    "show it. Call list_tasks to see the tasks and what each needs, judge_image to score an "
    "image, probe_judge to check that the judge looks at the images at all."
)

#: The images of a sample: each a path under the server's image root or a data URI.
ImagesArg = Annotated[
    dict[str, str | list[str]],
    Field(
        description="The images by role: 'output' is the image to judge; the task may need "
        "'source' (the image that was edited), 'mask', 'subject', 'subjects' (a list), "
        "'control' (list_tasks says which). Each is a path to a file under the server's image "
        "root (relative to it, or absolute) or the image as a data URI "
        "(data:image/png;base64,...)."
    ),
]


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """cigeval's errors (a bad request, a judge that cannot work) as tool errors the client
    reads; anything else stays a crash whose text the SDK keeps on the server."""
    try:
        yield
    except CigevalError as exc:
        raise ToolError(str(exc)) from exc


def build_server(tools: JudgeTools, settings: McpConfig) -> MCPServer:
    """The MCP server exposing ``tools`` as judge_image, list_tasks and probe_judge."""
    server: MCPServer = MCPServer(
        "cigeval",
        title="cigeval image judge",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    root = settings.image_root

    @server.tool(
        title="Judge an image",
        annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
        description=(
            "Score a generated or edited image for a task (list_tasks lists them): the judge "
            "answers each sub-question with a score and its reason, using the tools the method "
            "plans. Returns the score (0-1), the sub-scores with their reasons, tools and the "
            "regions the tools found (evidence boxes, in the pixels of the image they belong "
            f"to). Image paths must lie under {root}."
        ),
    )
    async def judge_image(
        task: Annotated[str, Field(description="The task id, e.g. 'text_guided_ig'.")],
        images: ImagesArg,
        prompt: Annotated[
            str | None, Field(description="The text prompt (generation tasks).")
        ] = None,
        instruction: Annotated[
            str | None, Field(description="The editing instruction (editing tasks).")
        ] = None,
        subject: Annotated[
            str | None, Field(description="The subject's name (subject-driven tasks).")
        ] = None,
        concepts: Annotated[
            list[str] | None, Field(description="The two concepts' names (multi_concept_ic).")
        ] = None,
        control_type: Annotated[
            str | None, Field(description="canny, hed, depth, openpose, ... (control_guided_ig).")
        ] = None,
        fields: Annotated[
            dict[str, str] | None,
            Field(description="Other text conditions a task of your own declares, by name."),
        ] = None,
        id: Annotated[str | None, Field(description="An id for the judgement.")] = None,
    ) -> JudgeResult:
        text: dict[str, Any] = {
            "prompt": prompt,
            "instruction": instruction,
            "subject": subject,
            "concepts": concepts,
            "control_type": control_type,
            **(fields or {}),
        }
        with _tool_errors():
            return await tools.judge_image(task, images, text=text, sample_id=id)

    @server.tool(
        title="List the tasks",
        annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
        description="Every task judge_image takes: the text conditions and images a sample "
        "needs, and the sub-questions the judge answers.",
    )
    def list_tasks() -> TaskList:
        with _tool_errors():
            return tools.list_tasks()

    @server.tool(
        title="Probe the judge",
        annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
        description=(
            "Check that the judge looks at the images: synthetic cases whose right answer is "
            "known (a blank output must score lower, a JPEG re-encode the same, ...) are judged "
            "and each probe passes or fails. Costs several judge calls per probe: narrow it "
            "with tasks and kinds."
        ),
    )
    async def probe_judge(
        tasks: Annotated[
            list[str] | None, Field(description="Task ids to probe (default: all seven).")
        ] = None,
        kinds: Annotated[
            list[str] | None,
            Field(description=f"Probe kinds (default: all): {', '.join(kind_names())}."),
        ] = None,
    ) -> ProbeSummary:
        with _tool_errors():
            return await tools.probe_judge(tasks, kinds)

    return server


def serve(server: MCPServer, settings: McpConfig) -> None:
    """Run ``server`` on the transport ``settings`` names, until the client or a signal ends
    it."""
    if settings.transport == "stdio":
        server.run("stdio")
    else:
        server.run(
            "streamable-http",
            host=settings.host,
            port=settings.port,
            streamable_http_path=settings.path,
        )
