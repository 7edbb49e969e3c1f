"""GenEval's output folders (github.com/djghosh13/geneval, README "Image generation"):

    DIR/
        00000/
            metadata.jsonl     the prompt's line of evaluation_metadata.jsonl (one JSON object)
            grid.png           optional, not judged
            samples/
                0000.png       one image per sample of the prompt
                0001.png
        00001/
            ...

As GenEval's own evaluation reads it, the prompt folders are those named by digits and the
images those named ``<digits>.png``; anything else is left out (and counted). Each image is
a text-to-image sample of the folder's prompt with the id ``GENERATOR/00000/0003``; its
``metadata`` holds GenEval's ``tag`` (single_object, two_object, counting, colors, position,
color_attr), ``include``/``exclude`` and the prompt's and sample's numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cigeval.sample import SampleLine, sample_line
from cigeval.terminal import echo, safe_text

_IMAGE = re.compile(r"(\d+)\.png")


def geneval_samples(folder: Path, generator: str) -> list[SampleLine]:
    """The samples of one GenEval output folder (see the module's docstring), in the order of
    the prompt folders and their images (by number)."""
    samples: list[SampleLine] = []
    left_out: list[str] = []
    prompts = sorted(
        (p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()),
        key=lambda p: (int(p.name), p.name),
    )
    if not prompts:
        echo(
            f"warning: {safe_text(folder)} holds no GenEval prompt folder (00000/, 00001/, ... "
            "each with metadata.jsonl and samples/)"
        )
    for prompt_folder in prompts:
        images_folder = prompt_folder / "samples"
        images = []
        if images_folder.is_dir():
            for path in images_folder.iterdir():
                if path.is_file() and _IMAGE.fullmatch(path.name):
                    images.append(path)
                else:
                    left_out.append(f"{prompt_folder.name}/samples/{path.name}")
        images.sort(key=lambda p: (int(p.stem), p.name))
        prompt_id = f"{generator}/{prompt_folder.name}"
        metadata, problem = _metadata(prompt_folder)
        if not images:
            problem = problem or f"{images_folder} holds no image named <number>.png"
            samples.append(_error(prompt_id, generator, problem))
            continue
        for image in images:
            sample_id = f"{prompt_id}/{image.stem}"
            if problem is not None:
                samples.append(_error(sample_id, generator, problem))
                continue
            samples.append(
                sample_line(_sample(sample_id, generator, metadata, prompt_folder, image), 0, None)
            )
    if left_out:
        shown = ", ".join(safe_text(name) for name in left_out[:5])
        more = f" and {len(left_out) - 5} more" if len(left_out) > 5 else ""
        echo(
            f"{safe_text(folder)}: {len(left_out)} file(s) in samples/ folders not named "
            f"<number>.png left out, as GenEval does ({shown}{more})"
        )
    return samples


def _metadata(prompt_folder: Path) -> tuple[dict[str, Any], str | None]:
    """The prompt folder's metadata object, or the problem that stops its samples."""
    path = prompt_folder / "metadata.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, f"GenEval prompt folder without metadata.jsonl: {path}"
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot read {path}: {exc}"
    try:
        metadata = json.loads(text)
    except ValueError as exc:
        return {}, f"{path} is not one JSON object: {exc}"
    if not isinstance(metadata, dict) or not isinstance(metadata.get("prompt"), str):
        return {}, f'{path} holds no "prompt" text'
    return metadata, None


def _sample(
    sample_id: str, generator: str, metadata: dict[str, Any], prompt_folder: Path, image: Path
) -> dict[str, Any]:
    tags = {k: v for k, v in metadata.items() if k != "prompt"}
    return {
        "id": sample_id,
        "task": "text_guided_ig",
        "prompt": metadata["prompt"],
        "images": {"output": str(image.resolve())},
        "model": generator,
        "metadata": {
            "benchmark": "geneval",
            **tags,
            "prompt_index": int(prompt_folder.name),
            "sample": int(image.stem),
        },
    }


def _error(sample_id: str, generator: str, problem: str) -> SampleLine:
    raw = {"id": sample_id, "task": "text_guided_ig", "model": generator}
    return SampleLine(line_number=0, raw=raw, error=problem)
