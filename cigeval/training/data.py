"""Reading and checking fine-tuning data before any training starts.

A data file is JSONL, one conversation per line, as ``cigeval meta export-trajectories``
writes it: ``messages`` (``role`` system/user/assistant, ``content`` a list of
``{"type": "image"}`` and ``{"type": "text", "text": ...}`` parts, or a string with one
``<image>`` placeholder per image) and ``images`` (one file path per image part, in order;
relative paths start at the data file's folder). Every line is checked (JSON, message shape,
at least one assistant reply, one existing, readable image file per placeholder); every
problem is reported with its line number, and nothing trains until the file is clean.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cigeval.errors import InputError

ROLES = ("system", "user", "assistant")
IMAGE_PLACEHOLDER = "<image>"
#: How many problems an error message lists before it summarises the rest.
_SHOWN = 20


@dataclass(frozen=True)
class TrainingRow:
    """One checked conversation: TRL-style messages and absolute image paths."""

    line: int
    messages: list[dict[str, Any]]
    images: list[str]

    def to_dataset_row(self) -> dict[str, Any]:
        """The row as TRL's ``SFTTrainer`` takes it (``messages`` and ``images``)."""
        return {"messages": self.messages, "images": self.images}


def _parts(content: Any) -> list[dict[str, Any]]:
    """Content as a list of image/text parts; a string splits at its ``<image>`` placeholders."""
    if isinstance(content, str):
        parts: list[dict[str, Any]] = []
        for index, text in enumerate(content.split(IMAGE_PLACEHOLDER)):
            if index:
                parts.append({"type": "image"})
            if text:
                parts.append({"type": "text", "text": text})
        return parts
    if not isinstance(content, list):
        raise ValueError("content must be a list of parts or a string")
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "image":
            if set(part) - {"type"}:
                raise ValueError(
                    "an image part is a placeholder {'type': 'image'}; list the files in 'images'"
                )
            parts.append({"type": "image"})
        elif kind == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        else:
            raise ValueError(f"a part must be an image or a text part, got {part!r:.80}")
    return parts


def _messages(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise ValueError("'messages' must be a non-empty list")
    messages = []
    for index, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise ValueError(f"message {index}: needs a role among {', '.join(ROLES)}")
        try:
            parts = _parts(message.get("content"))
        except ValueError as exc:
            raise ValueError(f"message {index}: {exc}") from None
        messages.append({"role": message["role"], "content": parts})
    replies = [m for m in messages if m["role"] == "assistant"]
    if not any(p["type"] == "text" and p["text"].strip() for m in replies for p in m["content"]):
        raise ValueError("no assistant reply to learn from (the loss is on assistant turns only)")
    return messages


class _ImageCheck:
    """Checks that image files exist and open, each file once."""

    def __init__(self) -> None:
        self._seen: dict[Path, str | None] = {}

    def problem(self, path: Path) -> str | None:
        if path not in self._seen:
            self._seen[path] = self._open(path)
        return self._seen[path]

    @staticmethod
    def _open(path: Path) -> str | None:
        from PIL import Image, UnidentifiedImageError

        if not path.is_file():
            return f"image file not found: {path}"
        try:
            with Image.open(path) as image:
                image.verify()
        except (OSError, UnidentifiedImageError, SyntaxError) as exc:
            return f"image file cannot be read: {path} ({exc})"
        return None


def _row(number: int, text: str, base: Path, images: _ImageCheck) -> TrainingRow:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("a line must be a JSON object with 'messages' and 'images'")
    messages = _messages(data.get("messages"))
    files = data.get("images", [])
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise ValueError("'images' must be a list of file paths")
    placeholders = sum(p["type"] == "image" for m in messages for p in m["content"])
    if placeholders != len(files):
        raise ValueError(f"{placeholders} image placeholder(s) but {len(files)} image file(s)")
    paths = []
    for name in files:
        path = Path(name).expanduser()
        path = path if path.is_absolute() else base / path
        problem = images.problem(path)
        if problem is not None:
            raise ValueError(problem)
        paths.append(str(path.resolve()))
    return TrainingRow(number, messages, paths)


def load_training_data(path: str | Path) -> list[TrainingRow]:
    """Every conversation of a data file, checked; an :class:`InputError` lists each bad line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read training data {path}: {exc}") from exc
    base = path.resolve().parent
    images = _ImageCheck()
    rows, problems = [], []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            rows.append(_row(number, text, base, images))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
    if problems:
        shown = "\n  ".join(problems[:_SHOWN])
        more = f"\n  ... and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
        raise InputError(
            f"{path}: {len(problems)} bad line(s); nothing was trained:\n  {shown}{more}"
        )
    if not rows:
        raise InputError(f"{path} holds no conversations to train on")
    return rows
