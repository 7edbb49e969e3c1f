"""cigeval's own time per model call and per sample, with 1024x1024 images and no latency.

    python benchmarks/overhead.py [--rounds 3]

The judge is a scripted backend answering at once (no network, no HTTP), so everything timed
is cigeval: loading and encoding the images (once per sample), building the planning and
judging messages, the agent graph, parsing, the trace and the Score. A second figure adds the
OpenAI client and HTTP against a zero-latency local server in its own process (JSON, base64
of the images, the SDK). Images are photo-like noise over a gradient, which PNG compresses
about as badly as a photograph.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import samples
from fake_server import ServerProcess

import cigeval.images
import cigeval.sample_run
from cigeval.backends.scripted import ScriptedBackend
from cigeval.config import RunConfig
from cigeval.evaluation import Evaluator
from cigeval.testing import rule_judge


def big_images(folder: Path, size: int = 1024) -> None:
    """Overwrite the sample images of ``folder`` with ``size`` x ``size`` photo-like ones."""
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 200, size, dtype=np.float32)
    for path in folder.glob("*.png"):
        base = ramp[None, :, None] + ramp[:, None, None] * 0.2
        pixels = base + rng.normal(0, 12, (size, size, 3))
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path)


def timed(evaluator: Evaluator, items: list, rounds: int) -> tuple[float, int, int]:
    """Seconds, calls and samples for evaluating ``items`` one after another, ``rounds`` times."""
    calls = 0

    async def run() -> None:
        nonlocal calls
        for item in items:
            score = await evaluator.evaluate_async(item)
            assert score.status == "ok", score.error
            calls += int(score.usage["calls"])
        await evaluator.aclose()

    asyncio.run(run())  # warm-up
    calls = 0
    started = time.perf_counter()
    for _ in range(rounds):
        asyncio.run(run())
    return time.perf_counter() - started, calls, rounds * len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cigeval-overhead-"))
    items = samples(folder, 7)
    big_images(folder)

    encodes = [0]
    original = cigeval.sample_run.encode_image

    def counting(image, fmt="PNG", **options):  # type: ignore[no-untyped-def]
        encodes[0] += 1
        return original(image, fmt, **options)

    cigeval.sample_run.encode_image = counting  # every image a sample prepares for the judge
    image = Image.open(next(folder.glob("*.png"))).convert("RGB")
    started = time.perf_counter()
    encoded = cigeval.images.EncodedImage.from_pil(image)
    encode_ms = (time.perf_counter() - started) * 1000

    from cigeval.sample import load_sample_images

    distinct = sum(len({id(i) for i in load_sample_images(s).values()}) for s in items)
    scripted = Evaluator(
        ScriptedBackend(rule_judge()), run_config=RunConfig(use_cache=False, preflight=False)
    )
    wall, calls, count = timed(scripted, items, args.rounds)
    per_round = encodes[0] // (args.rounds + 1)
    print(
        f"1024x1024 images, {count} samples of the seven tasks, {calls} model calls, one at a time"
    )
    print(
        f"one PNG encoding of a 1024x1024 image: {encode_ms:.0f} ms "
        f"({len(encoded.data) / 1e6:.1f} MB)"
    )
    print(
        f"cigeval alone (scripted judge): {wall / calls * 1000:.1f} ms per call, "
        f"{wall / count * 1000:.0f} ms per sample; {per_round} images prepared per "
        f"{len(items)} samples holding {distinct} images (each shown image once; RGB PNG/JPEG "
        "files are sent as they are, only converted images are PNG-encoded)"
    )
    small_folder = Path(tempfile.mkdtemp(prefix="cigeval-overhead-small-"))
    small = samples(small_folder, 7)
    wall, calls, count = timed(scripted, small, args.rounds)
    print(
        f"cigeval alone with 64x64 images (graph, messages, parsing, trace): "
        f"{wall / calls * 1000:.1f} ms per call, {wall / count * 1000:.0f} ms per sample"
    )
    with ServerProcess(0.0) as server:
        http = Evaluator(
            f"openai:bench@{server.url}", run_config=RunConfig(use_cache=False, preflight=False)
        )
        wall, calls, count = timed(http, items, args.rounds)
    print(
        f"with the OpenAI client and HTTP (server at 0 ms, its own process): "
        f"{wall / calls * 1000:.1f} ms per call, {wall / count * 1000:.0f} ms per sample"
    )


if __name__ == "__main__":
    main()
