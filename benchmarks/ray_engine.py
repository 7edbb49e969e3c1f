"""``cigeval evaluate`` with ``--engine local`` vs ``--engine ray``: wall time and records/s.

    python benchmarks/ray_engine.py [--samples 210] [--latency 0.25] [--concurrency 8]
                                    [--workers 1 2]

Each run is the whole command in its own process (so Ray's start-up counts), judging the same
samples of the seven tasks against ``benchmarks/fake_server.py`` (its own process, a fixed
latency per answer), without the cache and without Grounding (no weights here), so the
figures show the engine's own cost and what more workers (processes, each with
``--concurrency`` samples in flight) add when the judge's latency is what bounds a run.

Printed per run: the command's wall time, the summary's judging time (samples evaluated,
after start-up), and records/s over both.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, sample_dicts
from fake_server import ServerProcess


def write_samples(folder: Path, count: int) -> Path:
    """``count`` distinct samples cycling through the seven tasks, as a samples file."""
    path = folder / "samples.jsonl"
    with path.open("w") as handle:
        for sample in sample_dicts(folder, count):
            handle.write(json.dumps(sample) + "\n")
    return path


def run(samples: Path, out: Path, url: str, extra: list[str], env: dict[str, str]) -> dict:
    """One ``cigeval evaluate`` in a child process: wall time, judging time, records."""
    command = [
        sys.executable,
        "-c",
        "import sys; from cigeval.cli import main; sys.exit(main(sys.argv[1:]))",
        "evaluate",
        str(samples),
        "--model",
        f"openai:bench@{url}",
        "--out",
        str(out),
        "--no-cache",
        "--no-preflight",
        "--quiet",
        *extra,
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - started
    found = re.search(r"^time: ([\d.]+) s", done.stderr, re.MULTILINE)
    records = sum(1 for line in out.read_text().splitlines() if line.strip())
    if done.returncode != 0 or not found:
        sys.exit(f"run failed ({done.returncode}): {' '.join(extra)}\n{done.stderr[-3000:]}")
    return {"wall": wall, "judging": float(found.group(1)), "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=210)
    parser.add_argument("--latency", type=float, default=0.25, help="seconds per answer")
    parser.add_argument("--concurrency", type=int, default=8, help="samples at once per worker")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="cigeval-ray-bench-"))
    samples = write_samples(folder, args.samples)
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "RAY_USAGE_STATS_ENABLED": "0"}
    base = ["--tools", "Difference,Scene Graph", "--concurrency", str(args.concurrency)]
    print(
        f"{args.samples} samples, latency {args.latency * 1000:.0f} ms, --concurrency "
        f"{args.concurrency}, {os.cpu_count()} CPU cores, python {sys.version.split()[0]}"
    )
    print(
        f"{'engine':<18} {'wall s':>7} {'judging s':>10} {'rec/s wall':>11} {'rec/s judging':>14}"
    )
    with ServerProcess(args.latency) as server:
        runs = [("local", [])]
        runs += [
            (f"ray, {w} worker(s)", ["--engine", "ray", "--ray-workers", str(w)])
            for w in args.workers
        ]
        for index, (label, extra) in enumerate(runs):
            got = run(samples, folder / f"out-{index}.jsonl", server.url, base + extra, env)
            assert got["records"] == args.samples, got
            print(
                f"{label:<18} {got['wall']:>7.1f} {got['judging']:>10.1f} "
                f"{got['records'] / got['wall']:>11.1f} {got['records'] / got['judging']:>14.1f}"
            )


if __name__ == "__main__":
    main()
