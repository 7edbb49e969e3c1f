"""A recorded message can be rebuilt with every image where it stood."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from cigeval.images import EncodedImage
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.trace import MessageRecord

_IMAGES = [EncodedImage.from_pil(Image.new("RGB", (4, 4), (i * 60, 0, 0))) for i in range(3)]

_part = st.one_of(
    st.text(alphabet="ab\n ", max_size=6).map(TextPart),
    st.integers(0, 2).map(lambda i: ImagePart(_IMAGES[i], f"image{i}")),
)


def _expected(parts: list[TextPart | ImagePart]) -> list[tuple[str, str]]:
    """Consecutive text parts joined by newlines (as ``text_content`` joins them)."""
    out: list[tuple[str, str]] = []
    texts: list[str] | None = None
    for part in parts:
        if isinstance(part, TextPart):
            texts = [*(texts or []), part.text]
            continue
        if texts is not None and "\n".join(texts):
            out.append(("text", "\n".join(texts)))
        texts = None
        out.append(("image", part.image.sha256))
    if texts is not None and "\n".join(texts):
        out.append(("text", "\n".join(texts)))
    return out


@given(st.lists(_part, max_size=8))
def test_parts_come_back_in_order(parts: list[TextPart | ImagePart]) -> None:
    record = MessageRecord.from_message(Message("user", tuple(parts)))
    rebuilt = [
        (kind, value if kind == "text" else value["sha256"]) for kind, value in record.parts()
    ]
    assert rebuilt == _expected(parts)


def test_records_without_places_put_images_first() -> None:
    old = MessageRecord(
        role="user", text="look", images=[{"sha256": "ab", "label": "x", "size": [1, 1]}]
    )
    assert old.parts() == [("image", old.images[0]), ("text", "look")]
