"""Throughput against an OpenAI-compatible server with a fixed latency, as a share of the ideal.

    python benchmarks/throughput.py [--latency 0.25] [--fault-rate 0] [--concurrency 1 8 16 32 128]

For each concurrency C it evaluates max(--min-samples, --samples-per-slot x C) samples of the
seven tasks (no cache, results written with ResultsWriter as the CLI does) and prints:

* ``issue ideal``: calls x latency / C, the ideal the issue states. A CIGEval sample makes one
  planning call and then its 1-3 judge calls at once, so with C samples in flight more than C
  calls are in flight and this share can pass 100%.
* ``path ideal``: the bound from each sample's critical path, samples x 2 x latency / C (plan,
  then the judges in parallel), raised to calls x latency / max_calls_in_flight when the call
  limit (2 x C by default) binds first. 100% is the most any client could reach.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import samples
from fake_server import ServerProcess

from cigeval.config import RunConfig, calls_in_flight
from cigeval.evaluation import Evaluator
from cigeval.results import ResultsWriter


async def run_once(evaluator: Evaluator, items: list, concurrency: int, out: Path) -> dict:
    ok = errors = calls = 0
    started = time.perf_counter()
    with ResultsWriter(out, resume=False) as writer:
        async for score in evaluator.stream(items, concurrency):
            writer.write(score)
            ok += score.status == "ok"
            errors += score.status != "ok"
            calls += int(score.usage.get("calls", 0)) if score.usage else 0
    await evaluator.aclose()
    return {"wall": time.perf_counter() - started, "ok": ok, "errors": errors, "calls": calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 16, 32, 128])
    parser.add_argument("--samples-per-slot", type=int, default=4)
    parser.add_argument("--min-samples", type=int, default=14)
    parser.add_argument("--max-calls-in-flight", type=int, default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cigeval-bench-"))
    print(
        f"latency {args.latency * 1000:.0f} ms, fault rate {args.fault_rate:.0%}, "
        f"server in its own process; python {sys.version.split()[0]}"
    )
    header = (
        f"{'C':>4} {'samples':>7} {'calls':>6} {'sent':>6} {'wall s':>7} {'calls/s':>8} "
        f"{'issue ideal':>11} {'path ideal':>10} {'max in flight':>13} {'ok':>5}"
    )
    print(header)
    with ServerProcess(args.latency, args.fault_rate) as server:
        for concurrency in args.concurrency:
            run_config = RunConfig(
                concurrency=concurrency,
                use_cache=False,
                max_calls_in_flight=args.max_calls_in_flight,
                backoff_base_s=0.05,
            )
            evaluator = Evaluator(f"openai:bench-model@{server.url}", run_config=run_config)
            # warm up (lazy imports, graph compilation, connections) outside the timing
            asyncio.run(run_once(evaluator, samples(folder, 7, "w"), 7, folder / "w.jsonl"))
            count = max(args.min_samples, args.samples_per_slot * concurrency)
            items = samples(folder, count, f"c{concurrency}-")
            before = server.stats()
            result = asyncio.run(run_once(evaluator, items, concurrency, folder / "r.jsonl"))
            after = server.stats()
            sent = after["requests"] - before["requests"]
            latency, wall, calls = args.latency, result["wall"], result["calls"]
            limit = calls_in_flight(run_config)
            issue_ideal = calls * latency / concurrency
            path_ideal = max(count * 2 * latency / concurrency, calls * latency / limit)
            print(
                f"{concurrency:>4} {count:>7} {calls:>6} {sent:>6} {wall:>7.2f} "
                f"{calls / wall:>8.1f} {issue_ideal / wall:>11.0%} {path_ideal / wall:>10.0%} "
                f"{after['max_concurrent']:>13} {result['ok']:>5}",
                flush=True,
            )


if __name__ == "__main__":
    main()
