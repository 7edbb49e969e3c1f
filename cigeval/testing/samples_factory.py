"""Builds small image files and one sample per task for end-to-end tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw


def make_image(
    path: Path,
    colour: str,
    box: tuple[int, int, int, int] | None = None,
    box_colour: str = "blue",
    size: tuple[int, int] = (64, 64),
) -> str:
    """Save a flat image with an optional rectangle; returns the file name."""
    image = Image.new("RGB", size, colour)
    if box is not None:
        ImageDraw.Draw(image).rectangle(box, fill=box_colour)
    image.save(path)
    return path.name


def seven_task_samples(folder: Path) -> list[dict[str, Any]]:
    """One valid sample of each of the seven tasks, images saved in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    src = make_image(folder / "source.png", "white", (10, 10, 30, 30))
    out = make_image(folder / "output.png", "white", (10, 10, 30, 30), "red")
    mask = make_image(folder / "mask.png", "black", (8, 8, 32, 32), "white")
    subj = make_image(folder / "subject.png", "green", (20, 20, 40, 40), "yellow")
    subj2 = make_image(folder / "subject2.png", "gray", (5, 5, 25, 25), "purple")
    control = make_image(folder / "control.png", "black", (10, 10, 50, 50), "white")
    return [
        {
            "id": "t2i",
            "task": "text_guided_ig",
            "prompt": "a red square",
            "images": {"output": out},
            "model": "SD",
            "human": 0.5,
        },
        {
            "id": "mie",
            "task": "mask_guided_ie",
            "instruction": "make the square red",
            "images": {"source": src, "mask": mask, "output": out},
            "model": "Glide",
        },
        {
            "id": "tie",
            "task": "text_guided_ie",
            "instruction": "make the square red",
            "images": {"source": src, "output": out},
        },
        {
            "id": "sdig",
            "task": "subject_driven_ig",
            "subject": "toy",
            "prompt": "a toy on a table",
            "images": {"subject": subj, "output": out},
        },
        {
            "id": "sdie",
            "task": "subject_driven_ie",
            "subject": "toy",
            "images": {"source": src, "subject": subj, "output": out},
        },
        {
            "id": "mcic",
            "task": "multi_concept_ic",
            "concepts": ["toy", "cup"],
            "prompt": "a toy next to a cup",
            "images": {"subjects": [subj, subj2], "output": out},
        },
        {
            "id": "cgig",
            "task": "control_guided_ig",
            "prompt": "a box",
            "control_type": "canny",
            "images": {"control": control, "output": out},
        },
    ]


def variant(sample: dict[str, Any], sample_id: str, wording: str) -> dict[str, Any]:
    """A shallow copy of ``sample`` with the id ``sample_id`` and ``wording`` appended to its
    prompt or instruction (so its model calls differ from the original's)."""
    copy = dict(sample)
    copy["id"] = sample_id
    for field in ("prompt", "instruction"):
        if field in copy:
            copy[field] = f"{copy[field]}{wording}"
    return copy


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write records as JSONL."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
