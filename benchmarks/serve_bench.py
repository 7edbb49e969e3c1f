"""``cigeval serve`` under load: request latency percentiles and images/s at several
concurrencies and batch sizes, and the server's CPU per item against judging in-process.

Starts the fake judge (``benchmarks/fake_server.py``, its own process, ``--latency`` s per
call) and ``cigeval serve`` (its own process, no tools, no cache: one judge call per T2I
item), then runs ``cigeval serve-bench``'s driver against it and prints its table. Last, the
same number of items is judged in-process (``Evaluator.evaluate_many``) and the CPU seconds
per item of both are printed (the server's from /proc, the driver's work excluded).

    python benchmarks/serve_bench.py [--latency 0.5] [--concurrency 1 4 16] \
        [--batch-size 1 8 64] [--requests 8]
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from common import free_port, process_cpu_s
from fake_server import ServerProcess

from cigeval.serve.bench import run_bench, summary

ROOT = Path(__file__).resolve().parent.parent


def _wait(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"cigeval serve did not answer at {url}")


def _in_process_cpu(judge_url: str, items: int) -> float:
    """CPU seconds per item of judging ``items`` T2I items in this process."""
    from PIL import Image

    import cigeval

    buffer = io.BytesIO()
    Image.new("RGB", (256, 256), (30, 90, 160)).save(buffer, format="JPEG")
    samples = [
        {"id": str(i), "task": "text_guided_ig", "prompt": "a photo of a cat",
         "images": {"output": buffer.getvalue()}}
        for i in range(items)
    ]  # fmt: skip
    evaluator = cigeval.Evaluator(
        f"openai:fake-model@{judge_url}",
        run_config=cigeval.RunConfig(use_cache=False, concurrency=64),
        tools=(),
    )
    evaluator.evaluate_many(samples[:1])  # warm: imports, clients
    started = time.process_time()
    evaluator.evaluate_many(samples, 64)
    return (time.process_time() - started) / items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.5, help="judge seconds per call")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--batch-size", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--requests", type=int, default=8, help="requests per cell")
    args = parser.parse_args()
    port = free_port()
    with ServerProcess(args.latency, light=True) as judge:
        command = [
            sys.executable, "-m", "cigeval", "serve", "--model", f"openai:fake-model@{judge.url}",
            "--tools", "", "--no-cache", "--port", str(port),
        ]  # fmt: skip
        server = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait(url)
            cpu_before = process_cpu_s(server.pid)
            rows = run_bench(url, args.concurrency, args.batch_size, args.requests)
            served = sum(r.batch_size * max(r.requests, r.concurrency) for r in rows)
            server_cpu = (process_cpu_s(server.pid) - cpu_before) / served
        finally:
            server.terminate()
            server.wait()
        print(f"judge latency {args.latency} s per call; one call per item")
        print(summary(rows))
        local_cpu = _in_process_cpu(judge.url, min(served, 256))
    print(
        f"CPU per item: server {server_cpu * 1000:.1f} ms, in-process {local_cpu * 1000:.1f} ms "
        f"(ratio {server_cpu / local_cpu:.2f})"
    )


if __name__ == "__main__":
    main()
