"""One card per sample: the condition text, the input images in their natural order (the
output last), and per judge its score, each sub-question (score, tool, query, the tool's text
and highlighted images, the evidence regions drawn on the images they belong to) and the
reasoning; errors with their message.

The same card serves the report page and the Jupyter card (``Score.to_html``): only how an
image is referenced differs (``image_tag``). This module reads records into plain values;
the template ``assets/card.j2`` lays them out and escapes every one (model text is shown,
never interpreted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from cigeval.report.render import macro
from cigeval.results.record import (
    conditions_of,
    degraded_count,
    evidence_box,
    evidence_frame,
    generator_of,
    images_not_shown_of,
    input_images_of,
    sub_scores_of,
    task_of,
)


@dataclass(frozen=True)
class Figure:
    """One image of a card: shown from ``src`` (a data URI), or filled in by the page's script
    from ``key`` (its sha256), or a box saying ``reason`` when neither is set."""

    caption: str
    src: str | None = None
    key: str | None = None
    reason: str = "missing"
    #: Said under the caption (an image the judge was not sent).
    note: str | None = None


#: ``image_tag(sha256, caption)`` -> the Figure showing one image (or saying it is missing).
ImageTag = Callable[[str, str], Figure]

CSS = """
.cg-card{font-family:system-ui,sans-serif;font-size:13px;border:1px solid #ccc;border-radius:6px;
 padding:8px 10px;margin:8px 0;background:#fff;color:#222}
.cg-head{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:baseline}
.cg-id{font-weight:600}.cg-muted{color:#666}
.cg-badge{display:inline-block;padding:1px 6px;border-radius:9px;background:#e8f0fb;color:#1a4d8f}
.cg-badge.cg-err{background:#fde8e8;color:#a00}
.cg-badge.cg-deg{background:#fff3d6;color:#8a5a00}
.cg-cond{margin:4px 0}.cg-cond b{color:#555;font-weight:600}
.cg-imgs{display:flex;flex-wrap:wrap;gap:6px;margin:6px 0}
.cg-fig{margin:0;text-align:center;font-size:11px;color:#555}
.cg-fig img{display:block;max-width:192px;max-height:192px;border:1px solid #ddd;background:#f4f4f4}
.cg-missing{display:flex;width:120px;height:80px;align-items:center;justify-content:center;
 border:1px dashed #c66;color:#a00;font-size:11px}
.cg-judges{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:8px}
.cg-judge{border-top:2px solid #dbe4f0;padding-top:4px;min-width:0}
.cg-judge h4{margin:2px 0 4px;font-size:13px}
.cg-subs{border-collapse:collapse;width:100%}
.cg-subs td,.cg-subs th{border-top:1px solid #eee;padding:3px 4px;vertical-align:top;
 text-align:left}
.cg-subs th{font-weight:600;color:#555;font-size:12px}
.cg-pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-family:ui-monospace,monospace;
 font-size:11px;max-height:14em;overflow:auto;background:#f7f7f7;padding:3px}
.cg-text{white-space:pre-wrap;word-break:break-word}
.cg-tool-imgs img{max-width:96px;max-height:96px}
.cg-subs td.cg-tool{min-width:150px;max-width:260px}
.cg-error{color:#a00;white-space:pre-wrap;word-break:break-word}
.cg-ev{position:relative;display:block;width:fit-content;margin:0 auto 2px;line-height:0}
.cg-ev img{border:0;outline:1px solid #ddd;max-width:128px;max-height:128px}
.cg-ev svg{position:absolute;left:0;top:0;width:100%;height:100%;pointer-events:none;
 overflow:visible}
.cg-ev rect{fill:none;stroke-width:2px;vector-effect:non-scaling-stroke}
"""

#: The colour each shipped tool's evidence is drawn in; other tools' in :data:`_OTHER_TOOL`.
TOOL_COLOURS = {
    "Grounding": "#1d63d8",
    "Difference": "#d7261e",
    "Zoom": "#13913a",
    "OCR": "#8a2be2",
}
_OTHER_TOOL = "#e08a00"


@dataclass(frozen=True)
class Region:
    """One evidence box drawn on a figure, in the pixels of the image it belongs to."""

    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str


@dataclass(frozen=True)
class EvidenceFigure:
    """An input image with a sub-question's evidence boxes over it: an SVG whose viewBox is
    the image's own pixel frame (``frame``), stretched over the thumbnail, so every box lands
    where it is in the image whatever size the thumbnail is shown at."""

    figure: Figure
    frame: tuple[int, int]
    regions: tuple[Region, ...]


def _condition_label(name: str) -> str:
    from cigeval.tasks.labels import condition_label

    return "Concepts" if name == "concepts" else condition_label(name)


def _score_text(record: Mapping[str, Any]) -> str | None:
    value = record.get("score")
    if record.get("status") != "ok" or not isinstance(value, int | float):
        return None
    text = f"{value:.3f}"
    calibrated = record.get("calibrated")
    if isinstance(calibrated, Mapping) and isinstance(calibrated.get("value"), int | float):
        text += f" · calibrated {calibrated['value']:.3f}"
        interval = calibrated.get("interval")
        if isinstance(interval, list | tuple) and len(interval) == 2:
            text += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
        if calibrated.get("abstain"):
            text += " (abstain: interval too wide)"
    return text


def _sub_score(sub: Mapping[str, Any]) -> str | None:
    value = sub.get("score")
    if not isinstance(value, int | float):
        return None
    scale = sub.get("scale") or (0, 10)
    high = scale[1] if isinstance(scale, list | tuple) and len(scale) == 2 else 10
    return f"{value:g}/{high:g}"


def _steps(sub: Mapping[str, Any]) -> list[tuple[str, str]]:
    steps = [s for s in sub.get("tool_steps") or [] if isinstance(s, dict)]
    if len(steps) <= 1:
        return []
    out = []
    for step in steps:
        head = f"round {step.get('round', '?')}: {step.get('tool', '?')}"
        if step.get("query"):
            head += f" · query: {step['query']}"
        out.append((head, str(step.get("error") or step.get("output") or "")))
    return out


def _evidence_figures(
    sub: Mapping[str, Any], task: str, inputs: Mapping[str, str], image_tag: ImageTag
) -> tuple[list[EvidenceFigure], list[str]]:
    """The sub-question's evidence drawn on the images it belongs to (in the images' natural
    order), and one line per region in words. A region whose image is not among the record's
    inputs, or whose frame is not recorded, is listed but not drawn."""
    entries = [e for e in sub.get("evidence") or [] if isinstance(e, dict)]
    by_role: dict[str, list[Region]] = {}
    frames: dict[str, tuple[int, int]] = {}
    lines = []
    for entry in entries:
        box, size = evidence_box(entry), evidence_frame(entry)
        role, tool = str(entry.get("role")), str(entry.get("tool") or "?")
        label = str(entry.get("label") or "region")
        if box is None:
            continue
        x0, y0, x1, y1 = box
        words = f"{role}: {label} [{x0:.0f}, {y0:.0f}, {x1:.0f}, {y1:.0f}] ({tool})"
        lines.append(words)
        if role not in inputs or size is None:
            continue
        if frames.setdefault(role, size) != size:
            continue  # one frame per image: a box in another one would be drawn wrongly
        colour = TOOL_COLOURS.get(tool, _OTHER_TOOL)
        region = Region(x0, y0, x1 - x0, y1 - y0, colour, words)
        by_role.setdefault(role, []).append(region)
    figures = [
        EvidenceFigure(image_tag(inputs[role], role), frames[role], tuple(by_role[role]))
        for role in image_order(task, by_role)
    ]
    return figures, lines


def _sub_view(
    sub: Mapping[str, Any], image_tag: ImageTag, task: str, inputs: Mapping[str, str]
) -> dict[str, Any]:
    steps = _steps(sub)
    evidence, evidence_lines = _evidence_figures(sub, task, inputs, image_tag)
    images = sub.get("tool_image_ids") or {}
    return {
        "question": str(sub.get("question") or sub.get("question_id") or ""),
        "score": _sub_score(sub),
        "tool": str(sub["tool"]) if sub.get("tool") else None,
        "query": str(sub["tool_query"]) if sub.get("tool") and sub.get("tool_query") else None,
        "steps": steps,
        "output": str(sub["tool_output"]) if not steps and sub.get("tool_output") else None,
        "figures": [image_tag(str(sha), str(role)) for role, sha in images.items()]
        if isinstance(images, dict)
        else [],
        "evidence": evidence,
        "evidence_lines": evidence_lines,
        "degraded": bool(sub.get("degraded")),
        "note": str(sub["note"]) if sub.get("note") else None,
        "reasoning": str(sub.get("reasoning") or ""),
        "error": str(sub["error"]) if sub.get("error") else None,
    }


def _numbers(values: Any, digits: str, keep_missing: bool) -> str | None:
    if not isinstance(values, dict) or not values:
        return None
    parts = [
        f"{k}={v:{digits}}" if isinstance(v, int | float) else f"{k}=–"
        for k, v in values.items()
        if keep_missing or isinstance(v, int | float)
    ]
    return ", ".join(parts)


def _judge_view(
    label: str, record: Mapping[str, Any] | None, image_tag: ImageTag
) -> dict[str, Any]:
    if record is None:
        return {"label": label, "missing": True}
    return {
        "label": label,
        "missing": False,
        "score": _score_text(record),
        "error": str(record["error"]) if record.get("error") else None,
        "dimensions": _numbers(record.get("dimensions"), ".2f", keep_missing=True),
        "subs": [
            _sub_view(sub, image_tag, task_of(record), input_images_of(record))
            for sub in sub_scores_of(record)
        ],
        "spread": _numbers(record.get("spread"), ".3g", keep_missing=False),
    }


def image_order(task: str, roles: Iterable[str]) -> list[str]:
    """Image roles in their natural order: the task's ``image_roles`` order (references and
    sources first), other roles after them, the output last."""
    declared: list[str] = []
    try:
        from cigeval.tasks import get_task

        spec = get_task(task)
        declared = [*spec.image_roles, *spec.optional_image_roles]
    except Exception:  # an unknown task (a user task not loaded): fall back to the names
        declared = []

    def position(role: str) -> tuple[int, int, str]:
        if role == "output" or role.startswith("output_"):
            return (2, 0, role)
        for index, name in enumerate(declared):
            if role == name or (name == "subjects" and role.startswith("subject_")):
                return (0, index, role)
        return (1, 0, role)

    return sorted(roles, key=position)


def sample_card(
    sample_id: str,
    judged: Sequence[tuple[str, Mapping[str, Any] | None]],
    image_tag: ImageTag,
) -> str:
    """The card of one sample: ``judged`` lists (judge label, its record or None), side by
    side; the condition text and input images come from the first record that has them."""
    records = [r for _, r in judged if r is not None]
    first = records[0] if records else {}
    task = task_of(first)
    conditions: dict[str, str] = {}
    images: dict[str, str] = {}
    not_shown: dict[str, str] = {}
    for record in records:
        conditions = conditions or conditions_of(record)
        for role, sha in input_images_of(record).items():
            images.setdefault(role, sha)
        for role, sha in images_not_shown_of(record).items():
            not_shown.setdefault(role, sha)
    for role, sha in not_shown.items():
        images.setdefault(role, sha)
    shown = {role for record in records for role in input_images_of(record)}
    card = {
        "id": sample_id,
        "task": task,
        "generator": generator_of(first),
        "show_score": len(judged) == 1 and bool(records),
        "score": _score_text(first),
        "degraded": sum(degraded_count(r) for r in records),
        "human": None if first.get("human") is None else _human_text(first["human"]),
        "conditions": [(_condition_label(name), text) for name, text in conditions.items()],
        "no_conditions": not conditions and bool(records),
        "figures": [
            _figure(image_tag(images[role], role), role in not_shown and role not in shown)
            for role in image_order(task, images)
        ],
        "judges": [_judge_view(label, record, image_tag) for label, record in judged],
    }
    return str(_card_macro()(card))


#: The note under an image the judge was never sent (docs/what-the-judge-sees.md#image-roles).
NOT_SHOWN_NOTE = "not shown to the judge"


def _figure(figure: Figure, not_shown: bool) -> Figure:
    return replace(figure, note=NOT_SHOWN_NOTE) if not_shown else figure


@cache
def _card_macro() -> Any:
    return macro("card.j2", "card")


def _human_text(human: Any) -> str:
    if isinstance(human, dict):
        return ", ".join(f"{k}={v}" for k, v in human.items())
    return str(human)


def inline_image_tag(record: Mapping[str, Any], images: Mapping[str, Any]) -> ImageTag:
    """An ``image_tag`` for Jupyter: each image as a data URI, read from ``images`` (sha256
    -> PIL image held in memory) or from the record's ``image_files``."""
    from cigeval.report.images import file_thumbnail_data_uri, thumbnail_data_uri

    files = record.get("image_files") or {}

    def tag(sha: str, caption: str) -> Figure:
        image = images.get(sha)
        try:
            if image is not None:  # the pixels the judge was shown
                return Figure(caption, src=thumbnail_data_uri(image, 256))
            location = files.get(sha)
            if location and Path(location).is_file():
                data = Path(location).read_bytes()
                uri = file_thumbnail_data_uri(data, location, 256, mask=caption == "mask")
                return Figure(caption, src=uri)
        except Exception as exc:  # an unreadable image is shown as such, never fatal
            return Figure(caption, reason=f"unreadable: {type(exc).__name__}")
        return Figure(caption, reason="image not available")

    return tag
