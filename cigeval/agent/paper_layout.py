"""The official request layout (``EvalConfig.request_layout="official"``, the paper's method).

The official code (HITsz-TMG/Agentic-CIGEval, ``evaluate.py``, ``agent/openai.py``) sends every
request as one user message: the whole prompt text first, then the images, unlabelled, in its
order. The judge's prompt is one template per task and sub-question with the tool text
(``{tool_text}``: the focus sentence, the scene graphs, or nothing) inside the rules, before
the objective; the planner's is one template with the task's description (``{task}``)
inside. The templates are exact text with ``{name}`` placeholders (:mod:`cigeval.prompts.exact`),
filled in the official code's order, so a prompt dir written by ``cigeval official-prompts``
gives the official requests byte for byte. A task without such templates (a user's task) keeps
cigeval's layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval.messages import ImagePart, Message, TextPart
from cigeval.prompts import paper_templates as paper_names
from cigeval.prompts import render
from cigeval.prompts.exact import exact_path, fill, read_exact
from cigeval.registry import normalize_name
from cigeval.sample import join_one_by_one
from cigeval.tasks.spec import field_text
from cigeval.tools.registry import OFFICIAL_TOOL_NAMES

if TYPE_CHECKING:
    from PIL import Image

    from cigeval.config import EvalConfig
    from cigeval.images import EncodedImage
    from cigeval.sample import Sample
    from cigeval.sample_run import SampleRun
    from cigeval.tasks import SubQuestion, TaskSpec
    from cigeval.tools import Tool, ToolResult

#: Tools whose official tool text is the focus sentence, whatever they found.
FOCUS_TOOLS = ("Grounding", "Difference")

#: The placeholders the official code fills in each judge prompt, in its order (before
#: ``{tool_text}``, which always comes last); text = the prompt.
JUDGE_PLACEHOLDERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("text_guided_ig", "prompt_following"): ("text",),
    ("mask_guided_ie", "edit_success"): ("instruction",),
    ("mask_guided_ie", "over_editing"): ("instruction",),
    ("text_guided_ie", "edit_success"): ("instruction",),
    ("text_guided_ie", "over_editing"): ("instruction",),
    ("subject_driven_ig", "subject_similarity"): ("subject",),
    ("subject_driven_ig", "prompt_following"): ("text",),
    ("subject_driven_ie", "subject_similarity"): ("subject",),
    ("subject_driven_ie", "background_preservation"): (),
    ("multi_concept_ic", "concept_1_similarity"): ("text", "subject"),
    ("multi_concept_ic", "concept_2_similarity"): ("text", "subject"),
    ("multi_concept_ic", "prompt_following"): ("text",),
    ("control_guided_ig", "control_following"): (),
    ("control_guided_ig", "prompt_following"): ("text",),
}
#: The placeholder of each task's planner description.
PLAN_PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "text_guided_ig": ("text",),
    "mask_guided_ie": ("instruction",),
    "text_guided_ie": ("instruction",),
    "subject_driven_ig": ("text",),
    "subject_driven_ie": ("subject",),
    "multi_concept_ic": ("text",),
    "control_guided_ig": ("text",),
}
_ANY = ("text", "instruction", "subject")


def official_plan(config: EvalConfig, spec: TaskSpec) -> bool:
    """Whether the planner's request of ``spec`` takes the official layout."""
    return (
        config.request_layout == "official"
        and exact_path(paper_names.plan_template(spec.id), config.prompt_dir) is not None
    )


def official_judge(config: EvalConfig, spec: TaskSpec, question: SubQuestion) -> bool:
    """Whether the judge's first request of ``question`` takes the official layout."""
    template = paper_names.judge_template(spec.id, question.id)
    return (
        config.request_layout == "official" and exact_path(template, config.prompt_dir) is not None
    )


def _value(sample: Sample, placeholder: str, question: SubQuestion | None) -> str:
    """A placeholder's value, stripped as the official code strips its inputs."""
    name = {"text": "prompt"}.get(placeholder, placeholder)
    if placeholder == "subject" and question is not None and question.condition_field:
        name = question.condition_field  # a concept question's own concept
    return (field_text(sample, name) or "").strip()


def tool_text(run: SampleRun, result: ToolResult | None) -> str:
    """What ``{tool_text}`` holds: nothing without a tool, the focus sentence after Grounding
    or Difference, the scene graphs as the model wrote them after Scene Graph, and any other
    tool's own text."""
    prompt_dir = run.config.prompt_dir
    if result is None:
        return ""
    if result.tool in FOCUS_TOOLS:
        return fill(paper_names.FOCUS, (), prompt_dir)
    graphs = result.data.get("scene_graph_texts")
    if isinstance(graphs, dict) and len(graphs) in (1, 2):
        texts = [str(t) for t in graphs.values()]
        if len(texts) == 1:
            return fill(paper_names.ONE_SCENE_GRAPH, [("scene_graph", texts[0])], prompt_dir)
        pairs = [("scene_graph_1", texts[0]), ("scene_graph_2", texts[1])]
        return fill(paper_names.TWO_SCENE_GRAPHS, pairs, prompt_dir)
    return result.text


def judge_messages(
    run: SampleRun,
    question: SubQuestion,
    result: ToolResult | None,
    can_request_tool: bool,
    tool_names: list[str],
) -> list[Message]:
    """One user message: the sub-question's prompt (tool text inside), then its images
    (a tool's highlighted versions where it made them), unlabelled."""
    spec = run.task
    names = JUDGE_PLACEHOLDERS.get((spec.id, question.id), _ANY)
    values = [(name, _value(run.sample, name, question)) for name in names]
    values.append(("tool_text", tool_text(run, result)))
    parts: list[TextPart | ImagePart] = [
        TextPart(
            fill(paper_names.judge_template(spec.id, question.id), values, run.config.prompt_dir)
        )
    ]
    if can_request_tool:  # cigeval's rounds (--max-rounds > 1): how to ask for a tool
        parts.append(
            TextPart(
                render(
                    "judge_reply.j2",
                    prompt_dir=run.config.prompt_dir,
                    can_request_tool=True,
                    tool_names=", ".join(f'"{n}"' for n in tool_names),
                )
            )
        )
    replaced = result.images if result is not None else {}
    for role in question.image_roles:
        if role in run.images and role != "mask":
            parts.append(ImagePart(run.encode(replaced.get(role, run.loaded[role])), role))
    # images a tool adds (Zoom, which the paper does not have), after the question's own
    if result is not None:
        for view in result.views:
            parts.append(ImagePart(run.encode(view.image), f"{result.tool}:{view.role}"))
    return [Message("user", tuple(parts))]


def planner_tools(tools: list[Tool], prompt_dir: str | None = None) -> list[tuple[str, str]]:
    """The tools the planner is shown, as (name, description): the official ones offered,
    under the official prompt's names and in its order (Highlight, SceneGraph, MaskFocus),
    then every other offered tool (OCR, your own) under its own name and description."""
    offered = {normalize_name(t.name): t for t in tools}
    shown: list[tuple[str, str]] = []
    official = set()
    for name in paper_names.OFFICIAL_TOOLS:
        key = normalize_name(OFFICIAL_TOOL_NAMES[name])
        if key in offered:
            official.add(key)
            shown.append((name, read_exact(paper_names.PLANNER_TOOL[name], prompt_dir)))
    for key, tool in offered.items():
        if key not in official:
            shown.append((tool.name, tool.description))
    return shown


def planner_tools_departure(tools: list[Tool]) -> str | None:
    """How the planner's tool list departs from the official prompt's (which lists Highlight,
    SceneGraph and MaskFocus, whatever a run offers), or None when it does not."""
    shown = [name for name, _ in planner_tools(tools)]
    if shown == list(paper_names.OFFICIAL_TOOLS):
        return None
    listed = ", ".join(shown) or "no tool"
    return f"{listed} (the official prompt lists {', '.join(paper_names.OFFICIAL_TOOLS)})"


def plan_messages(
    run: SampleRun, spec: TaskSpec, roles: list[str], tools: list[Tool]
) -> list[Message]:
    """One user message: the planner's prompt with the tools this run offers (official and
    others in one numbered list, :func:`planner_tools`) and the task's description, then the
    images ``roles`` (the task's input order), unlabelled."""
    prompt_dir = run.config.prompt_dir
    shown = planner_tools(tools, prompt_dir)
    lines = "\n".join(
        paper_names.tool_line(number, name, description)
        for number, (name, description) in enumerate(shown, start=1)
    )
    choices = " or ".join(name for name, _ in shown)
    placeholders = PLAN_PLACEHOLDERS.get(spec.id, _ANY)
    values = [(name, _value(run.sample, name, None)) for name in placeholders]
    task = fill(paper_names.plan_template(spec.id), values, prompt_dir)
    # The tools first: the task's text is the sample's, and is never filled in itself.
    filled = [("tools", lines), ("tool_choices", choices), ("task", task)]
    parts: list[TextPart | ImagePart] = [TextPart(fill(paper_names.PLANNER, filled, prompt_dir))]
    parts += [ImagePart(image, role) for role, image in _planner_images(run, roles)]
    return [Message("user", tuple(parts))]


_CONCEPTS = ("subject_1", "subject_2")


def _planner_images(run: SampleRun, roles: list[str]) -> list[tuple[str, EncodedImage]]:
    """The planner's images, encoded: ``roles``' images, except two concept reference
    images, which are shown joined into one in their place, as ImagenHub gives them and as
    the prompt describes them (:func:`cigeval.sample.join_side_by_side`)."""
    if "subject" in roles or not all(role in roles for role in _CONCEPTS):
        return [(role, run.encode(run.loaded[role])) for role in roles]
    images = []
    for role in roles:  # encoded in the order shown
        if role == _CONCEPTS[0]:
            joined = run.encode_made("planner:joined concepts", lambda: _joined_concepts(run))
            images.append(("subject", joined))
        elif role not in _CONCEPTS:
            images.append((role, run.encode(run.loaded[role])))
    return images


def _joined_concepts(run: SampleRun) -> Image.Image:
    """The two concept images joined, each from pixels decoded for this once where it is not
    decoded already, one after the other (nothing of them is kept: the judge calls show the
    concept images in their encodings made beforehand)."""
    images = [run.loaded[role] for role in _CONCEPTS]
    return join_one_by_one([image.size for image in images], lambda n: images[n].pixels_once())
