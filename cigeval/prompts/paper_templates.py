"""The names of the paper layout's exact-text templates (``paper_*.txt``), in one place.

The built-in ones are cigeval's paraphrases of the official prompts; ``cigeval
official-prompts`` writes the official ones under the same names (:mod:`.official_source`);
a ``--prompt-dir`` used with the paper layout must hold every one a run needs
(:mod:`.prompt_set`).
"""

from __future__ import annotations

#: The planner's template: ``{tools}`` (the numbered tool lines), ``{tool_choices}`` (their
#: names joined by " or ") and ``{task}`` (the task's own template, :func:`plan_template`).
PLANNER = "paper_planner"
#: The scene-graph request's template.
SCENE_GRAPH = "paper_scene_graph"
#: The tool text after Grounding ("Highlight") or Difference ("MaskFocus").
FOCUS = "paper_tool_focus"
#: The tool text of one scene graph (``{scene_graph}``) and of two (``{scene_graph_1}``, ``_2``).
ONE_SCENE_GRAPH = "paper_tool_scene_graph"
TWO_SCENE_GRAPHS = "paper_tool_scene_graphs"
#: The official reply reading's repair request (``{reply}``: the reply it could not read).
REPAIR = "paper_repair"
#: The official planner's tools, in the order its prompt lists them.
OFFICIAL_TOOLS = ("Highlight", "SceneGraph", "MaskFocus")
#: The planner's line describing each official tool (the description only).
PLANNER_TOOL = {name: f"paper_planner_tool_{name.lower()}" for name in OFFICIAL_TOOLS}

#: The built-in tasks, and the sub-questions each asks the judge, in the official order.
TASK_QUESTIONS: dict[str, tuple[str, ...]] = {
    "text_guided_ig": ("prompt_following",),
    "mask_guided_ie": ("edit_success", "over_editing"),
    "text_guided_ie": ("edit_success", "over_editing"),
    "subject_driven_ig": ("subject_similarity", "prompt_following"),
    "subject_driven_ie": ("subject_similarity", "background_preservation"),
    "multi_concept_ic": ("concept_1_similarity", "concept_2_similarity", "prompt_following"),
    "control_guided_ig": ("control_following", "prompt_following"),
}


def judge_template(task_id: str, question_id: str) -> str:
    """The judge template of one sub-question."""
    return f"paper_judge_{task_id}_{question_id}"


def plan_template(task_id: str) -> str:
    """The planner's description of one task (the official rule and task lines)."""
    return f"paper_plan_{task_id}"


def tool_line(number: int, name: str, description: str) -> str:
    """One line of the planner's tool list, as the official prompt writes it."""
    return f"{number}. **{name}**: {description}"


def paper_templates() -> list[str]:
    """Every template the paper layout may render for the built-in tasks."""
    names = [PLANNER, *PLANNER_TOOL.values(), SCENE_GRAPH, FOCUS, ONE_SCENE_GRAPH, TWO_SCENE_GRAPHS]
    for task, questions in TASK_QUESTIONS.items():
        names.append(plan_template(task))
        names += [judge_template(task, question) for question in questions]
    names.append(REPAIR)
    return names
