"""Zoom, checked from the judge's side on the planted-edit set (shared by a test and
``benchmarks/zoom_crops.py``; no pytest).

The pairs of :mod:`cigeval.planted_edits` are judged as text-guided edits (source, the
editor's output, the instruction; no mask, so nothing but the tools says where the edit is)
through the OpenAI HTTP path against a local fake judge server, whose planner chooses Zoom.
Each crop is then read back from the request the server received: its label (``the source
image zoomed in on [x0, y0, x1, y1] of its pixels``), and its pixels, which must be that
window of the image the sample gave, enlarged (compared with an independent bicubic
enlargement of the window: over :data:`SAME_PIXELS_DB`). A planted region (each edit made and
each unrequested change) counts as contained when one zoomed window holds it whole in the
source crop and, moved by the editor's shift, in the output crop of the same window; an
object moved clear of its place counts when each of its two places is held so.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

#: Two renderings of one window agree when their PSNR is above this (dB).
SAME_PIXELS_DB = 28.0
_LABEL = re.compile(
    r"\(Zoom\): the (\w+) image zoomed in on \[(-?\d+), (-?\d+), (-?\d+), (-?\d+)\] of its "
    r"pixels, enlarged ([\d.]+)x"
)


@dataclass
class ZoomCheck:
    """What the judge received on a planted-edit set."""

    #: Planted regions of the pairs whose editor changed something locally.
    regions: int = 0
    #: Those some zoom window held whole, in the source crop and the output crop.
    contained: int = 0
    #: Crops whose pixels were not the window their label names (should be none).
    unverified: int = 0
    #: Per crop shown: the share of the image its window covers.
    window_shares: list[float] = field(default_factory=list)
    #: Per crop shown: how much it was enlarged.
    zooms: list[float] = field(default_factory=list)
    #: Locally edited pairs whose judge got no crop at all.
    no_crop: int = 0
    #: Pairs by kind, and those of each kind whose judge got a crop.
    pairs: dict[str, int] = field(default_factory=dict)
    with_crop: dict[str, int] = field(default_factory=dict)

    @property
    def share(self) -> float:
        """The share of planted regions contained (0 without any)."""
        return self.contained / self.regions if self.regions else 0.0


def check_zoom(
    count: int,
    folder: Path,
    *,
    seed: int = 0,
    size: int = 256,
    settings: dict[str, Any] | None = None,
    concurrency: int = 4,
) -> ZoomCheck:
    """Judge ``count`` planted pairs (``seed``, pictures of ``size`` pixels) with Zoom planned
    for the edit-success question under the ``extended`` method (and ``settings``: more
    EvalConfig fields, e.g. ``difference``), and read back what the judge server received."""
    from cigeval.backends.openai_backend import OpenAIBackend
    from cigeval.config import RunConfig
    from cigeval.evaluation import evaluate_many
    from cigeval.planted_edits import planted_pairs
    from cigeval.sample import sample_from_dict
    from cigeval.testing import rule_judge
    from cigeval.testing.openai_server import FakeOpenAIServer

    folder.mkdir(parents=True, exist_ok=True)
    pairs = planted_pairs(count, seed=seed, size=size)
    by_source, samples = {}, []
    for pair in pairs:
        source_png = pair.source_png  # encoded on each access: once here
        (folder / f"{pair.id}-source.png").write_bytes(source_png)
        (folder / f"{pair.id}-output.jpg").write_bytes(pair.edited_jpeg)
        by_source[hashlib.sha256(source_png).hexdigest()] = pair
        fields = {"id": pair.id, "task": "text_guided_ie", "instruction": pair.instruction,
                  "images": {"source": f"{pair.id}-source.png",
                             "output": f"{pair.id}-output.jpg"}}  # fmt: skip
        samples.append(sample_from_dict(fields, base_dir=folder))
    judge = rule_judge(tools={"edit_success": "Zoom"})
    run = RunConfig(use_cache=False, preflight=False, concurrency=concurrency)
    with FakeOpenAIServer(judge) as server:
        backend = OpenAIBackend("judge-model", [server.base_url])
        scores = evaluate_many(samples, model=backend, run_config=run, method="extended",
                               tools=("Zoom", "Difference"), **(settings or {}))  # fmt: skip
        bodies = [r.body for r in server.requests]
    failed = [s for s in scores if s.status != "ok"]
    if failed:
        raise RuntimeError(f"{len(failed)} pair(s) not judged, e.g. {failed[0].error}")
    check = ZoomCheck()
    seen: set[str] = set()
    for body in bodies:
        crops = _crops(body)
        if crops is None:
            continue
        source_sha, shown = crops
        pair = by_source[source_sha]
        seen.add(pair.id)
        _count(check, pair, shown)
    for pair in pairs:
        if pair.id not in seen:
            _count(check, pair, [])
    return check


def _crops(body: dict[str, Any]) -> tuple[str, list[tuple[str, tuple[int, ...], Any]]] | None:
    """(sha256 of the source image sent, [(role, window, crop pixels)]) of a judge request
    with Zoom crops; None for any other request (the planner, a question without Zoom)."""
    from PIL import Image

    parts = body["messages"][-1]["content"]
    if not isinstance(parts, list) or not any(
        p.get("type") == "text" and "RULES:" in p["text"] for p in parts
    ):
        return None
    images = [p for p in parts if p.get("type") == "image_url"]
    if not images or "(Zoom)" not in str(parts):
        return None
    source = _bytes(images[0]["image_url"]["url"])
    shown = []
    for text, image in pairwise(parts):
        label = _LABEL.search(text.get("text", "")) if text.get("type") == "text" else None
        if label is None or image.get("type") != "image_url":
            continue
        window = tuple(int(v) for v in label.groups()[1:5])
        pixels = Image.open(io.BytesIO(_bytes(image["image_url"]["url"]))).convert("RGB")
        shown.append((label.group(1), window, pixels))
    return hashlib.sha256(source).hexdigest(), shown


def _bytes(uri: str) -> bytes:
    return base64.b64decode(uri.split(",", 1)[1])


def _count(check: ZoomCheck, pair: Any, shown: list[tuple[str, tuple[int, ...], Any]]) -> None:
    check.pairs[pair.kind] = check.pairs.get(pair.kind, 0) + 1
    if shown:
        check.with_crop[pair.kind] = check.with_crop.get(pair.kind, 0) + 1
    if pair.kind not in ("edit", "over_edit"):
        return
    originals = {"source": pair.source, "output": pair.edited}
    windows: dict[str, list[tuple[int, ...]]] = {"source": [], "output": []}
    for role, window, pixels in shown:
        if not _same_pixels(pixels, originals[role], window):
            check.unverified += 1
            continue
        windows[role].append(window)
        side = originals[role].width * originals[role].height
        check.window_shares.append((window[2] - window[0]) * (window[3] - window[1]) / side)
        check.zooms.append(originals[role].width / max(1, window[2] - window[0]))
    if not shown:
        check.no_crop += 1
    for edit in pair.edits + pair.over_edits:
        check.regions += 1
        crops = list(zip(windows["source"], windows["output"], strict=False))
        whole = _in_a_crop(crops, edit.box, pair.noise.shift)
        if whole or all(_in_a_crop(crops, part, pair.noise.shift) for part in edit.parts):
            check.contained += 1


def _in_a_crop(
    crops: list[tuple[tuple[int, ...], tuple[int, ...]]],
    box: tuple[int, ...],
    shift: tuple[float, float],
) -> bool:
    """Whether one crop holds ``box`` (source pixels) in its source window and, moved by the
    editor's ``shift``, in its output window."""
    x0, y0, x1, y1 = box
    dx, dy = shift
    moved = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
    return any(_holds(s, (x0, y0, x1, y1)) and _holds(o, moved) for s, o in crops)


def _holds(window: tuple[int, ...], box: tuple[float, ...]) -> bool:
    """Whether ``window`` (whole pixels, as the label rounds it) holds ``box``, to a pixel."""
    return (
        window[0] <= box[0] + 1
        and window[1] <= box[1] + 1
        and window[2] >= box[2] - 1
        and window[3] >= box[3] - 1
    )


def _same_pixels(crop: Any, original: Any, window: tuple[int, ...]) -> bool:
    """Whether ``crop`` shows ``window`` of ``original``: an independent bicubic enlargement
    of that window agrees with it (PSNR over :data:`SAME_PIXELS_DB`)."""
    import numpy as np
    from PIL import Image

    box = tuple(float(v) for v in window)
    expected = original.convert("RGB").resize(crop.size, Image.Resampling.BICUBIC, box=box)
    error = np.mean((np.asarray(crop, float) - np.asarray(expected, float)) ** 2)
    return bool(error == 0 or 10 * np.log10(255**2 / error) > SAME_PIXELS_DB)
