"""What a judge request shows, read back from the request itself, and samples to read it on.

Shared by the fidelity tests: they run the agent against a recording backend and compare,
sub-question by sub-question, the images (role and pixel size) and condition lines that
reached the judge with docs/what-the-judge-sees.md.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from cigeval.messages import ImagePart, ModelRequest
from cigeval.tasks.labels import CONDITION_LABELS
from cigeval.testing import request_text, template_of
from cigeval.tools import Box

DOC = Path(__file__).resolve().parent.parent / "docs" / "what-the-judge-sees.md"

#: Every image of the fidelity samples has its own size, so a size names its role.
SIZES = {
    "source": (64, 48),
    "mask": (64, 48),
    "output": (80, 60),
    "subject": (72, 56),
    "side_by_side": (100, 40),
    "control": (56, 52),
}
#: The condition labels of both layouts (the paper layout's prompt is "Text Prompt").
_LABELS = "|".join(
    re.escape(label) for label in sorted({*CONDITION_LABELS.values(), "Text Prompt"})
)
#: Where the reply format starts, in cigeval's layout and in the paper layout.
_REPLY_FORMAT = re.compile(r"Reply with JSON only|\n[^\n]*JSON format[^\n]*:\n\{")
_CONDITION_LINE = re.compile(rf"^({_LABELS}): (.+)$", re.MULTILINE)


def _picture(path: Path, size: tuple[int, int], left: str, right: str) -> str:
    image = Image.new("RGB", size, left)
    ImageDraw.Draw(image).rectangle((size[0] // 2, 0, size[0], size[1]), fill=right)
    image.save(path)
    return path.name


def fidelity_samples(folder: Path) -> dict[str, dict[str, Any]]:
    """One sample per task with every optional text field, images of distinct sizes; the
    multi-concept sample gives both concepts side by side in one image (as ImagenHub)."""
    folder.mkdir(parents=True, exist_ok=True)
    src = _picture(folder / "source.png", SIZES["source"], "white", "gray")
    out = _picture(folder / "output.png", SIZES["output"], "white", "red")
    mask = _picture(folder / "mask.png", SIZES["mask"], "black", "white")
    subject = _picture(folder / "subject.png", SIZES["subject"], "green", "yellow")
    pair = _picture(folder / "pair.png", SIZES["side_by_side"], "orange", "purple")
    control = _picture(folder / "control.png", SIZES["control"], "black", "white")
    return {
        "text_guided_ig": {"prompt": "a red apple on a table", "images": {"output": out}},
        "mask_guided_ie": {
            "instruction": "make the right half red",
            "images": {"source": src, "mask": mask, "output": out},
        },
        "text_guided_ie": {
            "instruction": "make the right half red",
            "images": {"source": src, "output": out},
        },
        "subject_driven_ig": {
            "subject": "dog",
            "prompt": "a dog on a beach",
            "images": {"subject": subject, "output": out},
        },
        "subject_driven_ie": {
            "subject": "dog",
            "images": {"source": src, "subject": subject, "output": out},
        },
        "multi_concept_ic": {
            "concepts": ["cat", "hat"],
            "prompt": "a cat wearing a hat",
            "images": {"subject": pair, "output": out},
        },
        "control_guided_ig": {
            "prompt": "a small house",
            "control_type": "canny",
            "images": {"control": control, "output": out},
        },
    }


def with_ids(samples: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples as records with ``id`` and ``task``."""
    return [{"id": task, "task": task, **fields} for task, fields in samples.items()]


def expected_size(role: str) -> tuple[int, int]:
    """The pixel size of the image a role names in :func:`fidelity_samples`."""
    if role in ("subject_1", "subject_2"):
        width, height = SIZES["side_by_side"]
        half = width // 2
        return (half, height) if role == "subject_1" else (width - half, height)
    return SIZES[role]


@dataclass
class JudgeView:
    """What one judge request showed: images as (role, (width, height)) and condition lines."""

    images: list[tuple[str, tuple[int, int]]]
    conditions: list[str]
    text: str
    request: ModelRequest


def judge_view(request: ModelRequest) -> JudgeView:
    """Read a first-round judge request: the user turn's images and condition lines."""
    user = request.messages[-1]
    images = [
        (str(p.label), (p.image.width, p.image.height))
        for p in user.parts
        if isinstance(p, ImagePart)
    ]
    # The conditions are the paragraph right before the reply format.
    before = _REPLY_FORMAT.split(user.text_content())[0].rstrip("\n")
    last_paragraph = before.split("\n\n")[-1]
    conditions = [m.group(0) for m in _CONDITION_LINE.finditer(last_paragraph)]
    return JudgeView(images, conditions, user.text_content(), request)


def plan_task_ids(text: str) -> list[str]:
    """The task ids a planner request asks about: cigeval's "- task_id N:" lines, or the paper
    layout's "<task> Task N:" lines."""
    ids = re.findall(r"- task_id (\d+):", text) or re.findall(r" Task (\d+): ", text)
    return list(dict.fromkeys(ids))


def planner_name(tool: str | None, text: str) -> str | None:
    """The name a planner answers with for cigeval's ``tool``: the official name (Highlight,
    SceneGraph, MaskFocus) where the planner request lists the tools so, as a model reading
    the paper layout's prompt would; else cigeval's name."""
    from cigeval.registry import normalize_name
    from cigeval.tools.registry import OFFICIAL_TOOL_NAMES

    if tool is None:
        return None
    for official, ours in OFFICIAL_TOOL_NAMES.items():
        if normalize_name(ours) == normalize_name(tool) and f"**{official}**" in text:
            return official
    return tool


def judge_views(requests: list[ModelRequest], questions: Any) -> dict[str, JudgeView]:
    """The judge request of each sub-question (by template and first image role)."""
    views: dict[str, JudgeView] = {}
    for request in requests:
        text = request_text(request)
        if "RULES:" not in text:
            continue
        view = judge_view(request)
        for question in questions:
            roles = [role for role, _ in view.images]
            if template_of(text) == question.template and roles == list(question.image_roles):
                assert question.id not in views, f"two judge requests for {question.id}"
                views[question.id] = view
    return views


def doc_rows() -> list[dict[str, str]]:
    """The rows of the per-sub-question table in docs/what-the-judge-sees.md."""
    return doc_table("Per sub-question")


def doc_table(heading: str) -> list[dict[str, str]]:
    """The rows of the first table under ``## <heading>`` in docs/what-the-judge-sees.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def ticked(cell: str) -> list[str]:
    """The `code` items of a table cell, in order."""
    return re.findall(r"`([^`]+)`", cell)


def fill(template: str, sample: dict[str, Any]) -> str:
    """A table placeholder text with the sample's fields: {prompt}, {concepts[0]}, ..."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        index = re.fullmatch(r"concepts\[(\d)\]", name)
        if index:
            return str(sample["concepts"][int(index.group(1))])
        return str(sample[name])

    return re.sub(r"\{([a-z_]+(?:\[\d\])?)\}", value, template)


def jpeg75(image: Image.Image) -> bytes:
    """``image`` as the official code sends it: RGB, JPEG at Pillow's default quality (75)."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG")
    return buffer.getvalue()


def decoded(part: ImagePart) -> Image.Image:
    """The image a request carried, decoded from the bytes sent."""
    return Image.open(io.BytesIO(part.image.data)).convert("RGB")


class RecordingDetector:
    """A stand-in GroundingDINO: records each query and finds one box in the top-left quarter."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def cache_key(self, image_sha256: str, query: str) -> str:
        return f"recording:{image_sha256}:{query}"

    def detect(self, image: Image.Image, query: str) -> list[Box]:
        self.queries.append(query)
        return [Box(0, 0, image.width / 2, image.height / 2, label="thing", score=0.9)]
