"""What a probe run costs: samples judged, model calls, images sent, and wall time.

    python benchmarks/probe_cost.py [--latency 1.0] [--concurrency 8]

Runs the whole probe set (seven tasks, every kind) per rubric against a scripted judge that
answers after ``--latency`` seconds (the offline judge of cigeval/testing/probe_judges.py,
which reads the images), with no response cache, and prints how many samples, calls, images
and image bytes a probe run sends, and how long it takes at that latency.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cigeval.backends.scripted import ScriptedBackend  # noqa: E402
from cigeval.config import RunConfig  # noqa: E402
from cigeval.messages import ModelRequest  # noqa: E402
from cigeval.probes import run_probes  # noqa: E402
from cigeval.testing.probe_judges import probe_judge  # noqa: E402

RUBRICS = ("cigeval", "viescore", "instruction_fidelity", "lmm_score")


def measure(rubric: str, latency: float, concurrency: int) -> None:
    judge = probe_judge()

    async def reply(request: ModelRequest) -> str:
        await asyncio.sleep(latency)
        return judge(request)

    backend = ScriptedBackend(reply, name="probe-cost")
    folder = Path(tempfile.mkdtemp(prefix="cigeval-probe-cost-"))
    run_config = RunConfig(use_cache=False, concurrency=concurrency)
    started = time.perf_counter()
    report = run_probes(backend, folder, rubric=rubric, run_config=run_config)
    wall = time.perf_counter() - started
    images = [i for r in backend.requests for m in r.messages for i in m.images()]
    samples: set[Any] = set()
    for probe in report.probes:
        for outcome in (probe.reference, probe.probe, *probe.samples):
            if outcome is not None:
                samples.add((outcome.sample_id, outcome.fresh))
    megabytes = sum(len(i.data) for i in images) / 1e6
    print(
        f"{rubric:<22} {report.total:>6} {len(report.skipped):>7} {len(samples):>7} "
        f"{len(backend.requests):>6} {len(images):>7} {megabytes:>8.2f}"
        f" {wall:>7.1f} {report.passed:>6}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per judge call")
    parser.add_argument("--concurrency", type=int, default=8, help="samples at once")
    args = parser.parse_args()
    print(f"latency {args.latency} s per call, concurrency {args.concurrency}, no cache")
    print(
        f"{'rubric':<22} {'probes':>6} {'skipped':>7} {'samples':>7} {'calls':>6} {'images':>7} "
        f"{'MB sent':>8} {'wall s':>7} {'passed':>6}"
    )
    for rubric in RUBRICS:
        measure(rubric, args.latency, args.concurrency)


if __name__ == "__main__":
    main()
