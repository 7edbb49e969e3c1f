"""``cigeval serve-bench``: drive a running ``cigeval serve`` at several concurrencies and
batch sizes and print latency percentiles and images per second, as the trainers' own
benchmarks do (each request a batch of synthetic T2I items).

Every image sent is new (noise, a different picture each time), as in RL, where no image
repeats: a response cache cannot answer any of them, so the images per second are the
judge's and the service's. Each cell reports the judge calls the service made for it; when
the service says a cache answered some, the bench warns (the figures then measure the
cache).
"""

from __future__ import annotations

import io
import itertools
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cigeval.serve.client import ScoreClient, ServiceError, b64


@dataclass(frozen=True)
class BenchRow:
    """One (concurrency, batch size) cell: request latencies, throughput, judge calls."""

    concurrency: int
    batch_size: int
    requests: int
    failed: int
    p50_s: float
    p90_s: float
    p99_s: float
    images_per_s: float
    item_errors: int
    judge_calls: int = 0
    cached_calls: int = 0

    def render(self) -> str:
        """One line of the table."""
        return (
            f"{self.concurrency:>11} {self.batch_size:>5} {self.requests:>8} {self.failed:>6} "
            f"{self.p50_s:>8.3f} {self.p90_s:>8.3f} {self.p99_s:>8.3f} "
            f"{self.images_per_s:>9.1f} {self.item_errors:>11} {self.judge_calls:>11} "
            f"{self.cached_calls:>6}"
        )


HEADER = (
    "concurrency batch requests failed    p50_s    p90_s    p99_s  images/s item_errors "
    "judge_calls cached"
)
#: Images made so far by this process: each new image differs from every earlier one.
_made = itertools.count()


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` percentile (0-100) of ``values``, linearly interpolated."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def new_image(size: int) -> str:
    """Base64 of a JPEG no earlier call made: noise seeded by a process-wide counter."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(next(_made))
    pixels = rng.integers(0, 256, (size // 8, size // 8, 3), dtype=np.uint8)
    image = Image.fromarray(pixels).resize((size, size), Image.Resampling.BILINEAR)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return b64(buffer.getvalue())


def _batch(batch_size: int, image_size: int, prompt: str, request: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"r{request}-{i}",
            "prompt": prompt,
            "images": {"output": new_image(image_size)},
            "group": f"r{request}-{i // 8}",
        }
        for i in range(batch_size)
    ]


def run_cell(
    client: ScoreClient,
    concurrency: int,
    batch_size: int,
    requests: int,
    *,
    image_size: int = 256,
    prompt: str = "a photo of a cat",
) -> BenchRow:
    """Send ``requests`` batches of ``batch_size`` new items, ``concurrency`` at a time (the
    images are made before the clock starts)."""
    batches = [_batch(batch_size, image_size, prompt, r) for r in range(requests)]
    latencies: list[float] = []
    counts = {"failed": 0, "errors": 0, "calls": 0, "cached": 0}
    lock = threading.Lock()

    def one(index: int) -> None:
        started = time.perf_counter()
        try:
            answer = client.score(batches[index])
        except (ServiceError, OSError):
            with lock:
                counts["failed"] += 1
            return
        elapsed = time.perf_counter() - started
        results = answer["results"]
        with lock:
            latencies.append(elapsed)
            counts["errors"] += answer["stats"]["error"] + answer["stats"]["timeout"]
            counts["cached"] += sum(r.get("cached_calls", 0) for r in results)
            counts["calls"] += sum(r.get("calls", 0) - r.get("cached_calls", 0) for r in results)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(requests)))
    wall = time.perf_counter() - started
    scored = len(latencies) * batch_size
    return BenchRow(
        concurrency=concurrency,
        batch_size=batch_size,
        requests=requests,
        failed=counts["failed"],
        p50_s=percentile(latencies, 50),
        p90_s=percentile(latencies, 90),
        p99_s=percentile(latencies, 99),
        images_per_s=scored / wall if wall > 0 else 0.0,
        item_errors=counts["errors"],
        judge_calls=counts["calls"],
        cached_calls=counts["cached"],
    )


def run_bench(
    url: str,
    concurrencies: Sequence[int],
    batch_sizes: Sequence[int],
    requests: int,
    *,
    api_key: str | None = None,
    image_size: int = 256,
    timeout_s: float = 600.0,
) -> list[BenchRow]:
    """Every (concurrency, batch size) cell against the server at ``url``."""
    client = ScoreClient(url, api_key=api_key, timeout_s=timeout_s)
    return [
        run_cell(client, c, b, max(requests, c), image_size=image_size)
        for c in concurrencies
        for b in batch_sizes
    ]


def summary(rows: Sequence[BenchRow]) -> str:
    """The table of ``rows`` and the best throughput."""
    lines = [HEADER, *(row.render() for row in rows)]
    if rows:
        best = max(rows, key=lambda r: r.images_per_s)
        lines.append(
            f"best: {best.images_per_s:.1f} images/s at concurrency {best.concurrency}, "
            f"batch {best.batch_size} (p50 {best.p50_s:.3f} s); "
            f"{sum(r.judge_calls for r in rows)} judge calls in all"
        )
    return "\n".join(lines)


def cache_warning(rows: Sequence[BenchRow]) -> str | None:
    """A warning when the service's response cache answered calls of the bench."""
    cached = sum(r.cached_calls for r in rows)
    if not cached:
        return None
    return (
        f"warning: the service's response cache answered {cached} judge call(s): these "
        "figures measure the cache, not the judge (RL images never repeat; start the "
        "service without --cache)"
    )
