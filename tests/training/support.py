"""Training data for the fine-tuning tests: small multi-turn judge conversations with images."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image

SYSTEM = "You are a careful judge of generated images."
TOOL_REQUEST = '{"thought": "I need to look closer", "tool": "Difference", "query": ""}'


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


IMAGE = {"type": "image"}


def conversation(index: int, folder: Path) -> dict[str, Any]:
    """A two-round judge conversation: tool request, observation with an image, score."""
    first = folder / f"output{index}.png"
    second = folder / f"highlighted{index}.png"
    Image.new("RGB", (80, 60), (40 * index % 255, 90, 10)).save(first)
    Image.new("RGB", (60, 90), (10, 40 * index % 255, 200)).save(second)
    score = json.dumps({"score": 5 + index % 5, "reasoning": "the red square is present"})
    return {
        "id": f"s{index}",
        "messages": [
            {"role": "system", "content": [text(SYSTEM)]},
            {
                "role": "user",
                "content": [text("Rate the image.\nImage 1: output"), IMAGE, text("Reply JSON.")],
            },
            {"role": "assistant", "content": [text(TOOL_REQUEST)]},
            {"role": "user", "content": [text("TOOL OUTPUT (Difference):"), IMAGE]},
            {"role": "assistant", "content": [text(score)]},
        ],
        "images": [first.name, second.name],
    }


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_data(folder: Path, count: int = 4) -> Path:
    """``count`` conversations in ``folder/train.jsonl``, image paths relative to it."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_rows(folder / "train.jsonl", [conversation(i, folder) for i in range(count)])
