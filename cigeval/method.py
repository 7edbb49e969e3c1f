"""The two method profiles: ``paper`` (the default) and ``extended``.

``paper`` is the CIGEval paper (arXiv 2504.07046) and its official code
(HITsz-TMG/Agentic-CIGEval) wherever that code runs; ``extended`` is cigeval's own
improvements, none of them measured against human ratings yet. Each departure is a setting of
its own: the method only fills in the settings a caller does not give, so ``--method paper
--tool-text detailed`` is the paper's method with the detailed tool text.

docs/what-the-judge-sees.md sets the two columns side by side, with the reasons.
"""

from __future__ import annotations

from typing import Any, Literal

Method = Literal["paper", "extended"]

#: The default method.
DEFAULT_METHOD: Method = "paper"

#: What each method sets, for every setting it decides. Nested dicts are the tools' settings,
#: whose presets fill in their own fields.
METHOD_SETTINGS: dict[str, dict[str, Any]] = {
    "paper": {
        "image_encoding": "jpeg75",
        "image_conversion": "official",
        "tool_use": "official",
        "tool_text": "focus",
        "planner_prompt": "paper",
        "scoring_rules": "paper",
        "scene_graph_prompt": "paper",
        "request_layout": "official",
        "reply_parsing": "official",
        "scene_graph_calls": "per_question",
        "scene_graph_text": "as_written",
        "highlight_large_boxes": "dim",
        "grounding": {"preset": "official"},
        "difference": {"preset": "official"},
    },
    "extended": {
        "temperature": 0.0,
        "max_tokens": 1024,
        "seed": 0,
        "image_encoding": "original",
        "image_conversion": "rescale",
        "tool_use": "any",
        "tool_text": "detailed",
        "planner_prompt": "extended",
        "scoring_rules": "extended",
        "scene_graph_prompt": "extended",
        "request_layout": "cigeval",
        "reply_parsing": "strict",
        "scene_graph_calls": "per_image",
        "scene_graph_text": "json",
        "highlight_large_boxes": "undimmed",
        "grounding": {"preset": "cigeval"},
        "difference": {"preset": "cigeval"},
    },
}


def with_method_settings(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` (EvalConfig input) with its method's settings filled in where not given.

    Returns the filled data and the names of the nested settings whose ``preset`` the method
    chose (so the caller can keep it out of the nested model's explicitly-set fields). An
    unknown method leaves the data as it is, for validation to reject.
    """
    method = data.get("method", DEFAULT_METHOD)
    settings = METHOD_SETTINGS.get(method) if isinstance(method, str) else None
    if settings is None:
        return data, []
    filled = dict(data)
    chosen_presets = []
    for name, value in settings.items():
        if not isinstance(value, dict):
            filled.setdefault(name, value)
            continue
        given = filled.get(name)
        if given is None:
            filled[name] = dict(value)
        elif isinstance(given, dict):
            if "preset" in given:
                continue
            filled[name] = {**value, **given}
        elif "preset" not in given.model_fields_set:
            filled[name] = {**value, **given.model_dump(exclude_unset=True)}
        else:
            continue
        chosen_presets.append(name)
    return filled, chosen_presets
