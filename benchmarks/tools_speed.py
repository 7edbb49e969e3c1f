"""Milliseconds of the tools' pixel work on a 1024x1024 photo-like pair.

    python benchmarks/tools_speed.py [--size 1024] [--repeats 30] [--opencv-threads N]

Rows: Difference + Highlight of both images (no encoding), under each method's settings;
encoding one highlighted image for the judge, in each method's format (``paper``: JPEG at
quality 75; ``extended``: PNG); and, measured in the same run for the ratio, the same work
done as cigeval 0.2 did it (a NumPy channel maximum, a boolean-mask quarter, Pillow's PNG).
Each figure is min / median / max over the repeats, after one warm-up.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from cigeval.config import EvalConfig  # noqa: E402
from cigeval.images import EncodedImage  # noqa: E402
from cigeval.tools.difference import compare_images, show_differences  # noqa: E402
from cigeval.tools.highlight import highlight_pixels, pixel_spans  # noqa: E402


def photo_like_pair(size: int, seed: int = 0) -> tuple[Image.Image, Image.Image]:
    """Gradients, waves, random shapes and sensor noise; the edit changes a few shapes."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float32)
    channels = [
        rng.uniform(40, 120) + 90 * (xs * np.cos(t) + ys * np.sin(t)) / size + 25 * np.sin(xs / 60)
        for t in rng.uniform(0, np.pi, 3)
    ]
    image = np.clip(np.stack(channels, axis=2), 0, 255).astype(np.uint8)
    for _ in range(25):
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        centre = (int(rng.integers(0, size)), int(rng.integers(0, size)))
        radius = int(rng.integers(10, size // 8))
        angle = float(rng.uniform(0, 180))
        cv2.ellipse(image, centre, (radius, radius // 2 + 1), angle, 0, 360, colour, -1)
    source = np.clip(image + rng.normal(0, 4, image.shape), 0, 255).astype(np.uint8)
    edited = np.clip(image + rng.normal(0, 4, image.shape), 0, 255).astype(np.uint8)
    for _ in range(3):
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        x0, y0 = (int(v) for v in rng.integers(0, size * 3 // 4, 2))
        cv2.rectangle(edited, (x0, y0), (x0 + size // 8, y0 + size // 10), colour, -1)
    return Image.fromarray(source), Image.fromarray(edited)


def timed(work: Callable[[], object], repeats: int) -> list[float]:
    work()  # warm-up: imports, first allocations
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return times


def row(label: str, times: list[float]) -> float:
    median = statistics.median(times)
    print(f"{label:<58} {min(times):7.1f} {median:7.1f} {max(times):7.1f}")
    return median


def difference_and_highlight(a: Image.Image, b: Image.Image, config: EvalConfig) -> None:
    """The Difference tool's pixel work, without encoding: compare, highlight both."""
    show_differences({"source": a, "output": b}, config)


def as_in_0_2(a: Image.Image, b: Image.Image) -> None:
    """The 0.2 code's costly steps: NumPy channel max, component boxes by ``minimum.at``,
    highlight through a boolean mask."""
    arr_a, arr_b = np.asarray(a), np.asarray(b)
    blurred = [cv2.GaussianBlur(x, (5, 5), 0) for x in (arr_a, arr_b)]
    changed = cv2.absdiff(*blurred).max(axis=2) > 30
    joined = cv2.dilate(changed.astype(np.uint8), np.ones((7, 7), np.uint8))
    count, labels = cv2.connectedComponents(joined, connectivity=8)
    ys, xs = np.nonzero(changed)
    component = np.asarray(labels[ys, xs], dtype=np.intp)
    x0 = np.full(count, np.iinfo(np.int64).max)
    np.minimum.at(x0, component, xs)
    inside = np.zeros(changed.shape, bool)
    inside[100:300, 100:300] = True
    for pixels in (arr_a, arr_b):
        dimmed = pixels // 4
        dimmed[inside] = pixels[inside]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument(
        "--opencv-threads", type=int, default=None, help="cv2.setNumThreads (default: OpenCV's)"
    )
    args = parser.parse_args()
    if args.opencv_threads is not None:
        cv2.setNumThreads(args.opencv_threads)
    a, b = photo_like_pair(args.size)
    paper, extended = EvalConfig(), EvalConfig(method="extended")
    size = f"{args.size}x{args.size}"
    versions = f"python {sys.version.split()[0]}, OpenCV {cv2.__version__}"
    print(f"{versions}, {cv2.getNumThreads()} OpenCV thread(s), {args.repeats} repeats")
    print(f"{'ms, ' + size + ' photo-like pair':<58} {'min':>7} {'median':>7} {'max':>7}")
    report = compare_images(a, b, config=paper.difference)
    spans = pixel_spans(a.width, a.height, report.regions)
    shown = Image.fromarray(highlight_pixels(np.asarray(a), spans))
    paper_ms = row(
        "Difference + Highlight, paper (official steps)",
        timed(lambda: difference_and_highlight(a, b, paper), args.repeats),
    )
    row(
        "Difference + Highlight, extended",
        timed(lambda: difference_and_highlight(a, b, extended), args.repeats),
    )
    old_ms = row(
        "  the same work as cigeval 0.2 did it", timed(lambda: as_in_0_2(a, b), args.repeats)
    )
    jpeg_ms = row(
        "encode one highlighted image, paper (JPEG q75, OpenCV)",
        timed(lambda: EncodedImage.from_pil(shown, encoding="jpeg75"), args.repeats),
    )
    row(
        "encode one highlighted image, extended (PNG, OpenCV)",
        timed(lambda: EncodedImage.from_pil(shown, encoding="original"), args.repeats),
    )

    def pillow(fmt: str, **options: object) -> None:
        shown.save(io.BytesIO(), format=fmt, **options)

    row(
        "  Pillow JPEG q75 (the official code's encoder)",
        timed(lambda: pillow("JPEG"), args.repeats),
    )
    png_ms = row(
        "  Pillow PNG, compress_level 1 (cigeval 0.2)",
        timed(lambda: pillow("PNG", compress_level=1), args.repeats),
    )
    print(
        f"ratios of the medians: Difference + Highlight {paper_ms / old_ms:.2f}x of 0.2's work; "
        f"tool image encoding (paper) {jpeg_ms / png_ms:.2f}x of 0.2's PNG"
    )


if __name__ == "__main__":
    main()
