"""Which planned tools run in which task (``EvalConfig.tool_use``).

The official evaluate pass runs Grounding ("Highlight") and Scene Graph in every task but
Difference ("MaskFocus") only in mask-guided editing; any other choice is judged without a
tool. ``tool_use="official"`` does the same (a note on the sub-score says why, which marks it
degraded); ``any`` runs every offered tool in every task. cigeval's own built-in tools (Zoom)
run under ``official`` in no task; tools the official code does not know and cigeval does not
ship (OCR, your own) run wherever they are offered.
"""

from __future__ import annotations

from cigeval._caller import in_callers_words
from cigeval.config import EvalConfig
from cigeval.registry import normalize_name

#: Tools the official evaluate pass runs only in some tasks: tool name -> task ids (none:
#: the paper has no such tool).
OFFICIAL_TOOL_TASKS: dict[str, tuple[str, ...]] = {"Difference": ("mask_guided_ie",), "Zoom": ()}


def why_not_run(tool: str, task: str, config: EvalConfig, chosen: str | None = None) -> str | None:
    """Why the planned ``tool`` is not run in ``task`` under ``config``, or None when it is.

    ``chosen``: the name the judge gave it (``MaskFocus``), named first; the option that runs
    it is given in the caller's words.
    """
    if config.tool_use != "official":
        return None
    by_key = {normalize_name(name): tasks for name, tasks in OFFICIAL_TOOL_TASKS.items()}
    tasks = by_key.get(normalize_name(tool))
    if tasks is None or task in tasks:
        return None
    named = f"{chosen} ({tool})" if chosen and chosen != tool else tool
    option = in_callers_words("--tool-use any", "tool_use='any'")
    if not tasks:
        return (
            f"the judge chose {named}, a tool the paper's method does not have ({option} runs it)"
        )
    return (
        f"the judge chose {named}, which the paper's method runs only in {', '.join(tasks)}, "
        f"not in {task} ({option} runs it)"
    )
