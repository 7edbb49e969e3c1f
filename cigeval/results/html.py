"""HTML rendering of a Score for Jupyter: the report's sample card (condition text, images in
their natural order with the output last, the judge's name, each sub-question with its tool,
query, tool text and highlighted images, the reasoning), with images inline."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cigeval.score import Score


def score_to_html(score: Score) -> str:
    """The card of one Score as self-contained HTML (images as data URIs, text escaped)."""
    from cigeval.report.cards import CSS, inline_image_tag, sample_card
    from cigeval.report.data import hashed_images

    record = score.to_record(include_trace=False)
    images = hashed_images(score)
    # images held in memory without a hash (a Score built by hand) are still shown
    unhashed = {r: f"role:{r}" for r in score.images if r not in score.input_images}
    images.update({key: score.images[r] for r, key in unhashed.items()})
    if unhashed:
        record["input_images"] = {**record.get("input_images", {}), **unhashed}
    card = sample_card(
        score.id, [(score.judge or "judge", record)], inline_image_tag(record, images)
    )
    return f"<div><style>{CSS}</style>{card}</div>"
