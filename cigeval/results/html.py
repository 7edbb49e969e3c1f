"""HTML rendering of a Score for Jupyter: input images, tool images and sub-scores."""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING

from PIL import Image

if TYPE_CHECKING:
    from cigeval.score import Score

THUMBNAIL_SIDE = 256


def _thumbnail_tag(image: Image.Image, caption: str) -> str:
    copy = image.copy()
    copy.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
    buffer = io.BytesIO()
    copy.save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        '<figure style="display:inline-block;margin:4px;text-align:center">'
        f'<img src="data:image/png;base64,{data}" style="max-width:{THUMBNAIL_SIDE}px"/>'
        f'<figcaption style="font-size:small">{html.escape(caption)}</figcaption></figure>'
    )


def score_to_html(score: Score) -> str:
    """A compact HTML card: header with the score, the images, one row per sub-score."""
    esc = html.escape
    if score.ok and score.value is not None:
        headline = f"<b>{score.value:.2f}</b>"
    else:
        headline = f'<b style="color:#b00">error</b>: {esc(score.error or "")}'
    parts = [
        '<div style="font-family:sans-serif;border:1px solid #ccc;padding:8px;border-radius:6px">',
        f"<div>{esc(score.id)} · {esc(score.task)} · {esc(score.rubric)} · {headline}</div>",
    ]
    if score.dimensions:
        dims = ", ".join(
            f"{esc(k)}={v:.2f}" if v is not None else f"{esc(k)}=–"
            for k, v in score.dimensions.items()
        )
        parts.append(f"<div>{dims}</div>")
    if score.images:
        parts.append("<div>")
        parts.extend(_thumbnail_tag(img, role) for role, img in score.images.items())
        parts.append("</div>")
    if score.sub_scores:
        parts.append(
            '<table style="border-collapse:collapse;margin-top:6px"><tr>'
            "<th>question</th><th>score</th><th>tool</th><th>reasoning</th>"
            "<th>tool images</th></tr>"
        )
        for sub in score.sub_scores:
            value = "–" if sub.score is None else f"{sub.score:g}"
            tool = esc(sub.tool or "none") + (f" ({esc(sub.tool_query)})" if sub.tool_query else "")
            if len(sub.tool_steps) > 1:
                tool += f"<br>{len(sub.tool_steps)} tool runs"
            if sub.note:
                tool += f"<br><i>{esc(sub.note)}</i>"
            text = esc(sub.reasoning or sub.error or "")
            images = "".join(_thumbnail_tag(img, role) for role, img in sub.tool_images.items())
            parts.append(
                f'<tr style="border-top:1px solid #eee"><td>{esc(sub.question)}</td>'
                f"<td>{value}</td><td>{tool}</td><td>{text}</td><td>{images}</td></tr>"
            )
        parts.append("</table>")
    if score.spread:
        spread = ", ".join(f"{esc(k)}={v:.3g}" for k, v in score.spread.items())
        parts.append(f"<div>judges' spread: {spread}</div>")
    parts.append("</div>")
    return "".join(parts)
