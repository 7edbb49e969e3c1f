"""A results record as an HTML card for Jupyter (``Score.to_html``): the report's sample card
with its images inline. It reads records, never Scores."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def record_to_html(
    record: Mapping[str, Any], images: Mapping[str, Any] | None = None, judge: str = "judge"
) -> str:
    """The card of one results record as self-contained HTML: ``images`` (sha256 -> PIL image
    held in memory) or the record's ``image_files`` as data URIs, every text escaped."""
    from cigeval.report.cards import CSS, inline_image_tag, sample_card

    tag = inline_image_tag(record, images or {})
    card = sample_card(str(record.get("id", "?")), [(judge, record)], tag)
    return f"<div><style>{CSS}</style>{card}</div>"
