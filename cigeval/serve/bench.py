"""``cigeval serve-bench``: drive a running ``cigeval serve`` at several concurrencies and
batch sizes and print latency percentiles and images per second, as the trainers' own
benchmarks do (each request a batch of synthetic T2I items)."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cigeval.serve.client import ScoreClient, ServiceError, b64


@dataclass(frozen=True)
class BenchRow:
    """One (concurrency, batch size) cell: request latencies and throughput."""

    concurrency: int
    batch_size: int
    requests: int
    failed: int
    p50_s: float
    p90_s: float
    p99_s: float
    images_per_s: float
    item_errors: int

    def render(self) -> str:
        """One line of the table."""
        return (
            f"{self.concurrency:>11} {self.batch_size:>5} {self.requests:>8} {self.failed:>6} "
            f"{self.p50_s:>8.3f} {self.p90_s:>8.3f} {self.p99_s:>8.3f} "
            f"{self.images_per_s:>9.1f} {self.item_errors:>11}"
        )


HEADER = "concurrency batch requests failed    p50_s    p90_s    p99_s  images/s item_errors"


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


def _image(index: int, size: int) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (index * 37 % 256, 90, 160)).save(buffer, format="JPEG")
    return b64(buffer.getvalue())


def run_cell(
    client: ScoreClient,
    concurrency: int,
    batch_size: int,
    requests: int,
    *,
    image_size: int = 256,
    prompt: str = "a photo of a cat",
) -> BenchRow:
    """Send ``requests`` batches of ``batch_size`` items, ``concurrency`` at a time."""
    images = [_image(i, image_size) for i in range(batch_size)]
    batch = [
        {"id": str(i), "prompt": prompt, "images": {"output": images[i]}, "group": str(i // 8)}
        for i in range(batch_size)
    ]
    latencies: list[float] = []
    failures = 0
    item_errors = 0
    lock = threading.Lock()

    def one(_: int) -> None:
        nonlocal failures, item_errors
        started = time.perf_counter()
        try:
            answer = client.score(batch)
        except (ServiceError, OSError):
            with lock:
                failures += 1
            return
        elapsed = time.perf_counter() - started
        with lock:
            latencies.append(elapsed)
            item_errors += answer["stats"]["error"] + answer["stats"]["timeout"]

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(requests)))
    wall = time.perf_counter() - started
    scored = len(latencies) * batch_size
    return BenchRow(
        concurrency=concurrency,
        batch_size=batch_size,
        requests=requests,
        failed=failures,
        p50_s=percentile(latencies, 50),
        p90_s=percentile(latencies, 90),
        p99_s=percentile(latencies, 99),
        images_per_s=scored / wall if wall > 0 else 0.0,
        item_errors=item_errors,
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
    """The table of ``rows``, and the best throughput."""
    lines = [HEADER, *(row.render() for row in rows)]
    if rows:
        best = max(rows, key=lambda r: r.images_per_s)
        lines.append(
            f"best: {best.images_per_s:.1f} images/s at concurrency {best.concurrency}, "
            f"batch {best.batch_size} (p50 {best.p50_s:.3f} s)"
        )
    return "\n".join(lines)
