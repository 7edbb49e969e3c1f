"""The planted-edit set written as files, for a reviewer, another tool or ``cigeval evaluate``.

Layout of the folder :func:`write_planted_set` fills::

    source/<id>.png          the clean source picture
    edited/<id>.jpg          the editor's output, byte for byte
    mask/<id>.png            where the instruction asks for a change (white), as a
                             mask-guided editing sample's mask
    edits/<id>-<n>.png       the mask of each requested edit (``r``) or unrequested one (``u``)
    planted.jsonl            one line per pair: what was planted (kinds, boxes, areas,
                             instruction, the editor's noise) and the files
    samples.jsonl            the pairs as ``mask_guided_ie`` samples (``cigeval evaluate``)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from cigeval.planted_edits.pairs import DEFAULT_SIZE, PlantedPair, planted_pair


def _mask_png(mask: np.ndarray) -> bytes:
    from cigeval.images import encode_pixels

    gray = np.where(mask, 255, 0).astype(np.uint8)
    return encode_pixels(np.repeat(gray[..., None], 3, axis=2), "PNG")


def write_pair(pair: PlantedPair, folder: Path) -> dict[str, object]:
    """Write one pair's files under ``folder``; its ``planted.jsonl`` line."""
    files = {
        "source": f"source/{pair.id}.png",
        "output": f"edited/{pair.id}.jpg",
        "mask": f"mask/{pair.id}.png",
    }
    contents = {
        "source": pair.source_png,
        "output": pair.edited_jpeg,
        "mask": _mask_png(pair.target_mask),
    }
    record = pair.as_record()
    for key, edits, tag in (("edits", pair.edits, "r"), ("over_edits", pair.over_edits, "u")):
        for n, (edit, line) in enumerate(zip(edits, record[key], strict=True)):  # type: ignore[call-overload]
            name = f"edits/{pair.id}-{tag}{n}.png"
            line["mask"] = name
            contents[name], files[name] = _mask_png(edit.mask), name
    for key, name in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(contents[key])
    record["files"] = {k: v for k, v in files.items() if k in ("source", "output", "mask")}
    return record


def write_planted_set(
    folder: str | Path, count: int, seed: int = 0, *, size: int = DEFAULT_SIZE
) -> Path:
    """Draw pairs 0 to ``count - 1`` of the set of ``seed`` and write them under ``folder``
    (see the module notes for the layout); the path of its ``planted.jsonl``."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    planted, samples = [], []
    for index in range(count):
        pair = planted_pair(seed, index, size=size)
        record = write_pair(pair, root)
        planted.append(json.dumps(record))
        sample = {
            "id": pair.id,
            "task": "mask_guided_ie",
            "instruction": pair.instruction,
            "images": record["files"],
            "metadata": {"planted": pair.kind, "seed": seed},
        }
        samples.append(json.dumps(sample))
    (root / "samples.jsonl").write_text("\n".join(samples) + "\n", encoding="utf-8")
    path = root / "planted.jsonl"
    path.write_text("\n".join(planted) + "\n", encoding="utf-8")
    return path
