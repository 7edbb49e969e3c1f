"""One trainer's batch against ``cigeval serve``: request latency against the critical path,
and the server's CPU per item.

Starts the fake judge (``benchmarks/fake_server.py --light``, its own process, ``--latency`` s
per call) and ``cigeval serve`` (its own process, as docs/serve.md starts it, with the
Difference tool offered so that a T2I item makes two dependent calls: the plan, then the
judgement), then posts ``--batches`` batches of ``--items`` T2I items one after another, each
image a new 512^2 JPEG, and prints the latency of each, their median against the critical
path (2 x latency), and the server's CPU seconds per item (user + system, from /proc).

    python benchmarks/serve_batch.py [--items 64] [--latency 1.0] [--batches 7] \
        [--size 512] [--compare CHECKOUT]

``--compare CHECKOUT`` runs the same against another checkout's ``cigeval`` in the same
rounds, alternating, so both see the same load on the machine.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from common import free_port, process_cpu_s
from fake_server import ServerProcess

ROOT = Path(__file__).resolve().parent.parent


def _images(count: int, size: int, seed: int) -> list[str]:
    """``count`` new photo-like JPEGs (quality 90), base64."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 200, size, dtype=np.float32)
    base = ramp[None, :, None] + ramp[:, None, None] * 0.2
    out = []
    for _ in range(count):
        pixels = base + rng.normal(0, 8, (size, size, 3)) + rng.uniform(0, 40, 3)
        buffer = io.BytesIO()
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
        out.append(base64.b64encode(buffer.getvalue()).decode("ascii"))
    return out


def _post(url: str, body: bytes) -> dict[str, object]:
    request = urllib.request.Request(
        f"{url}/v1/score", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        answer: dict[str, object] = json.load(response)
        return answer


class Server:
    """``cigeval serve`` of one checkout, in its own process."""

    def __init__(self, checkout: Path, judge_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [
            sys.executable, "-m", "cigeval", "serve", "--model", f"openai:fake-model@{judge_url}",
            "--tools", "Difference", "--port", str(self.port), "--concurrency", "64",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.process = subprocess.Popen(command, cwd=checkout, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"cigeval serve of {checkout} did not start") from None
                time.sleep(0.2)

    def batch(self, items: list[dict[str, object]]) -> tuple[float, float]:
        """Wall seconds and server CPU seconds of one batch."""
        body = json.dumps({"items": items}).encode()
        cpu = process_cpu_s(self.process.pid)
        started = time.perf_counter()
        answer = _post(self.url, body)
        wall = time.perf_counter() - started
        stats = answer["stats"]
        assert isinstance(stats, dict) and stats["ok"] == len(items), stats
        return wall, process_cpu_s(self.process.pid) - cpu

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--latency", type=float, default=1.0, help="judge seconds per call")
    parser.add_argument("--batches", type=int, default=7)
    parser.add_argument("--size", type=int, default=512, help="side of the JPEGs")
    parser.add_argument("--compare", type=Path, help="another checkout, measured alternately")
    args = parser.parse_args()
    checkouts = {"this": ROOT}
    if args.compare:
        checkouts["other"] = args.compare.resolve()
    walls: dict[str, list[float]] = {name: [] for name in checkouts}
    cpus: dict[str, list[float]] = {name: [] for name in checkouts}
    seed = 0
    with ServerProcess(args.latency, light=True) as judge:
        servers = {name: Server(path, judge.url) for name, path in checkouts.items()}
        try:
            for server in servers.values():  # one batch each before the count: not timed
                seed += 1
                server.batch(_items(args, seed))
            for round_ in range(args.batches):
                order = list(servers) if round_ % 2 == 0 else list(reversed(servers))
                for name in order:
                    seed += 1
                    wall, cpu = servers[name].batch(_items(args, seed))
                    walls[name].append(wall)
                    cpus[name].append(cpu / args.items)
        finally:
            for server in servers.values():
                server.close()
    path = 2 * args.latency
    print(
        f"{args.items} T2I items of {args.size}^2 JPEGs per batch, 2 dependent judge calls "
        f"x {args.latency:g} s (critical path {path:g} s); {args.batches} batches; "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPU cores"
    )
    for name in checkouts:
        w, c = walls[name], cpus[name]
        print(
            f"{name:>6}: p50 {statistics.median(w):.2f} s ({statistics.median(w) / path:.2f}x "
            f"the path; min {min(w):.2f}, max {max(w):.2f}); server CPU per item "
            f"{statistics.median(c) * 1000:.1f} ms (min {min(c) * 1000:.1f}, "
            f"max {max(c) * 1000:.1f})"
        )
    if args.compare:
        ratios = [a / b for a, b in zip(cpus["this"], cpus["other"], strict=True)]
        print(f"CPU per item this / other, each round: {', '.join(f'{r:.2f}' for r in ratios)}")


def _items(args: argparse.Namespace, seed: int) -> list[dict[str, object]]:
    images = _images(args.items, args.size, seed)
    return [
        {"id": str(i), "prompt": f"a photo of a cat, number {i % 8}", "images": {"output": image}}
        for i, image in enumerate(images)
    ]


if __name__ == "__main__":
    main()
