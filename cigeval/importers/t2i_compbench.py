"""T2I-CompBench's sample folders (github.com/Karine-Huang/T2I-CompBench, "Evaluation"):
images named after their prompt and a six-digit index, in a ``samples`` folder, one such
folder per category generated:

    DIR/samples/a green bench and a blue bowl_000000.png
    DIR/samples/a green bench and a blue bowl_000001.png

or, for several categories,

    DIR/color/samples/a green bench and a blue bowl_000000.png
    DIR/spatial/samples/a horse on the right of a car_000003.png

The prompt is the name before its last ``_``, the index (the benchmark's ``question_id``)
the digits after it. Each image is a text-to-image sample of its prompt with the id
``GENERATOR/CATEGORY/000003``; ``metadata.category`` is the name of the folder that holds
``samples/`` (or of DIR, when DIR holds the images itself), ``metadata.question_id`` the index.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cigeval.sample import SampleLine, sample_line
from cigeval.terminal import echo, safe_text

_IMAGE = re.compile(r"(?P<prompt>.+)_(?P<index>\d+)\.(?:png|jpg|jpeg)", re.IGNORECASE)


def t2i_compbench_samples(folder: Path, generator: str) -> list[SampleLine]:
    """The samples of one T2I-CompBench folder (see the module's docstring): each category's
    images in the order of their index, the categories in the order of their names."""
    samples: list[SampleLine] = []
    for category, images_folder in _sample_folders(folder):
        found = []
        left_out = []
        for path in images_folder.iterdir():
            match = _IMAGE.fullmatch(path.name) if path.is_file() else None
            if match is None:
                left_out.append(path.name)
            else:
                found.append((int(match["index"]), match["index"], match["prompt"], path))
        if left_out:
            echo(
                f"{safe_text(images_folder)}: {len(left_out)} file(s) not named "
                f"<prompt>_<index>.png left out (e.g. {safe_text(left_out[0])})"
            )
        for _, index, prompt, path in sorted(found):
            sample = _sample(generator, category, index, prompt, path)
            samples.append(sample_line(sample, 0, None))
    if not samples:
        echo(
            f"warning: {safe_text(folder)} holds no T2I-CompBench image (samples/<prompt>_"
            "<index>.png, or CATEGORY/samples/...)"
        )
    return samples


def _sample_folders(folder: Path) -> list[tuple[str, Path]]:
    """(category, folder of images): DIR/samples, DIR/*/samples, or DIR itself."""
    if folder.name == "samples":
        return [(folder.resolve().parent.name, folder)]
    found = []
    if (folder / "samples").is_dir():
        found.append((folder.resolve().name, folder / "samples"))
    for child in sorted(folder.iterdir()):
        if child.is_dir() and (child / "samples").is_dir():
            found.append((child.name, child / "samples"))
    return found or [(folder.resolve().name, folder)]


def _sample(generator: str, category: str, index: str, prompt: str, image: Path) -> dict[str, Any]:
    return {
        "id": f"{generator}/{category}/{index}",
        "task": "text_guided_ig",
        "prompt": prompt,
        "images": {"output": str(image.resolve())},
        "model": generator,
        "metadata": {
            "benchmark": "t2i-compbench",
            "category": category,
            "question_id": int(index),
        },
    }
