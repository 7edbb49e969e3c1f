"""One card per sample, as HTML: the condition text, the input images in their natural order
(the output last), and per judge its score, each sub-question (score, tool, query, the tool's
text and highlighted images) and the reasoning; errors with their message.

The same renderer serves the report page and the Jupyter card (``Score.to_html``): only how
an image is referenced differs (``image_tag``). Every piece of text from a record goes through
:func:`html.escape`: model text is shown, never interpreted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from cigeval.results.record import conditions_of, degraded_count, generator_of

#: ``image_tag(sha256, caption)`` -> the HTML showing one image (or saying it is missing).
ImageTag = Callable[[str, str], str]

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
"""


def _condition_label(name: str) -> str:
    from cigeval.tasks.labels import condition_label

    return "Concepts" if name == "concepts" else condition_label(name)


def _score_text(record: Mapping[str, Any]) -> str:
    value = record.get("score")
    if record.get("status") == "ok" and isinstance(value, int | float):
        return f'<span class="cg-badge">{value:.3f}</span>'
    return '<span class="cg-badge cg-err">error</span>'


def _sub_score(sub: Mapping[str, Any]) -> str:
    value = sub.get("score")
    if not isinstance(value, int | float):
        return '<span class="cg-err">–</span>'
    scale = sub.get("scale") or (0, 10)
    high = scale[1] if isinstance(scale, list | tuple) and len(scale) == 2 else 10
    return f"{value:g}/{high:g}"


def _pre(text: Any) -> str:
    return f'<div class="cg-pre">{escape(str(text))}</div>'


def _tool_cell(sub: Mapping[str, Any], image_tag: ImageTag) -> str:
    parts = []
    tool = sub.get("tool")
    if tool:
        query = sub.get("tool_query")
        parts.append(
            f"<b>{escape(str(tool))}</b>" + (f" · query: {escape(str(query))}" if query else "")
        )
    else:
        parts.append('<span class="cg-muted">no tool</span>')
    steps = [s for s in sub.get("tool_steps") or [] if isinstance(s, dict)]
    if len(steps) > 1:
        for step in steps:
            head = f"round {step.get('round', '?')}: {step.get('tool', '?')}"
            if step.get("query"):
                head += f" · query: {step['query']}"
            body = step.get("error") or step.get("output") or ""
            parts.append(
                f"<details><summary>{escape(head)}</summary>{_pre(body) if body else ''}</details>"
            )
    elif sub.get("tool_output"):
        parts.append(f"<details><summary>tool output</summary>{_pre(sub['tool_output'])}</details>")
    images = sub.get("tool_image_ids") or {}
    if isinstance(images, dict) and images:
        tags = "".join(image_tag(str(sha), str(role)) for role, sha in images.items())
        parts.append(f'<div class="cg-imgs cg-tool-imgs">{tags}</div>')
    if sub.get("degraded"):
        parts.append(
            '<div><span class="cg-badge cg-deg" title="judged without the tool the plan '
            'chose">degraded</span></div>'
        )
    if sub.get("note"):
        parts.append(f'<div class="cg-muted"><i>{escape(str(sub["note"]))}</i></div>')
    return "".join(parts)


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


def _judge_block(label: str, record: Mapping[str, Any] | None, image_tag: ImageTag) -> str:
    if record is None:
        return (
            f'<div class="cg-judge"><h4>{escape(label)}</h4>'
            '<div class="cg-muted">no record for this sample</div></div>'
        )
    parts = [f'<div class="cg-judge"><h4>{escape(label)} · {_score_text(record)}</h4>']
    if record.get("error"):
        parts.append(f'<div class="cg-error">{escape(str(record["error"]))}</div>')
    dimensions = record.get("dimensions")
    if isinstance(dimensions, dict) and dimensions:
        dims = ", ".join(
            f"{escape(str(k))}={v:.2f}" if isinstance(v, int | float) else f"{escape(str(k))}=–"
            for k, v in dimensions.items()
        )
        parts.append(f'<div class="cg-muted">{dims}</div>')
    subs = [s for s in record.get("sub_scores") or [] if isinstance(s, dict)]
    if subs:
        parts.append(
            '<table class="cg-subs"><tr><th>sub-question</th><th>score</th><th>tool</th>'
            "<th>reasoning</th></tr>"
        )
        for sub in subs:
            reasoning = escape(str(sub.get("reasoning") or ""))
            if sub.get("error"):
                reasoning += f'<div class="cg-error">{escape(str(sub["error"]))}</div>'
            parts.append(
                f"<tr><td>{escape(str(sub.get('question') or sub.get('question_id') or ''))}</td>"
                f'<td>{_sub_score(sub)}</td><td class="cg-tool">{_tool_cell(sub, image_tag)}</td>'
                f'<td class="cg-text">{reasoning}</td></tr>'
            )
        parts.append("</table>")
    spread = record.get("spread")
    if isinstance(spread, dict) and spread:
        text = ", ".join(
            f"{escape(str(k))}={v:.3g}" for k, v in spread.items() if isinstance(v, int | float)
        )
        parts.append(f'<div class="cg-muted">judges\' spread: {text}</div>')
    parts.append("</div>")
    return "".join(parts)


def sample_card(
    sample_id: str,
    judged: Sequence[tuple[str, Mapping[str, Any] | None]],
    image_tag: ImageTag,
) -> str:
    """The card of one sample: ``judged`` lists (judge label, its record or None), side by
    side; the condition text and input images come from the first record that has them."""
    records = [r for _, r in judged if r is not None]
    first = records[0] if records else {}
    task = str(first.get("task", "?"))
    head = [
        f'<span class="cg-id">{escape(sample_id)}</span>',
        f'<span class="cg-muted">{escape(task)}</span>',
        f"<span>generator: <b>{escape(generator_of(first))}</b></span>",
    ]
    if len(judged) == 1 and records:
        head.append(_score_text(first))
    degraded = sum(degraded_count(r) for r in records)
    if degraded:
        head.append(
            f'<span class="cg-badge cg-deg">degraded: {degraded} sub-question(s) judged '
            "without the planned tool</span>"
        )
    if first.get("human") is not None:
        head.append(f'<span class="cg-muted">human: {escape(_human_text(first["human"]))}</span>')
    parts = [f'<div class="cg-card"><div class="cg-head">{"".join(head)}</div>']
    conditions: dict[str, str] = {}
    for record in records:
        conditions = conditions or conditions_of(record)
    for name, text in conditions.items():
        parts.append(
            f'<div class="cg-cond"><b>{escape(_condition_label(name))}:</b> '
            f'<span class="cg-text">{escape(text)}</span></div>'
        )
    if not conditions and records:
        parts.append('<div class="cg-cond cg-muted">condition text not recorded</div>')
    images: dict[str, str] = {}
    for record in records:
        for role, sha in (record.get("input_images") or {}).items():
            if isinstance(sha, str):
                images.setdefault(str(role), sha)
    if images:
        tags = "".join(image_tag(images[role], role) for role in image_order(task, images))
        parts.append(f'<div class="cg-imgs">{tags}</div>')
    blocks = "".join(_judge_block(label, record, image_tag) for label, record in judged)
    parts.append(f'<div class="cg-judges">{blocks}</div></div>')
    return "".join(parts)


def _human_text(human: Any) -> str:
    if isinstance(human, dict):
        return ", ".join(f"{k}={v}" for k, v in human.items())
    return str(human)


def figure(src: str | None, caption: str, reason: str = "missing") -> str:
    """An image with its caption, or a 'missing' box when ``src`` is None."""
    body = (
        f'<img src="{escape(src)}" alt="{escape(caption)}" loading="lazy">'
        if src is not None
        else f'<span class="cg-missing">{escape(reason)}</span>'
    )
    return f'<figure class="cg-fig">{body}{escape(caption)}</figure>'


def inline_image_tag(record: Mapping[str, Any], images: Mapping[str, Any]) -> ImageTag:
    """An ``image_tag`` for Jupyter: each image as a data URI, read from ``images`` (sha256
    -> PIL image held in memory) or from the record's ``image_files``."""
    from cigeval.report.images import thumbnail_data_uri

    files = record.get("image_files") or {}

    def tag(sha: str, caption: str) -> str:
        image = images.get(sha)
        try:
            if image is not None:
                return figure(thumbnail_data_uri(image, 256), caption)
            location = files.get(sha)
            if location and Path(location).is_file():
                from PIL import Image

                with Image.open(location) as opened:
                    opened.load()
                    return figure(thumbnail_data_uri(opened, 256), caption)
        except Exception as exc:  # an unreadable image is shown as such, never fatal
            return figure(None, caption, f"unreadable: {type(exc).__name__}")
        return figure(None, caption, "image not available")

    return tag
