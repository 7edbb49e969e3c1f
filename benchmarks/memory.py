"""Peak memory while streaming many samples through Evaluator.stream and a ResultsWriter.

    python benchmarks/memory.py [--samples 10000] [--concurrency 16]

The samples are written to a JSONL file first and read lazily with iter_samples_file, as the
CLI does; the judge is a scripted backend answering at once (tiny images, no network). Peak
resident memory (getrusage) is printed after 1k, 5k and 10k samples: bounded memory means it
stops growing once the pipeline is full.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import peak_rss_mib

from cigeval.config import RunConfig
from cigeval.evaluation import Evaluator
from cigeval.messages import ModelRequest, ModelResponse, Usage
from cigeval.results import ResultsWriter
from cigeval.sample import iter_samples_file
from cigeval.testing import rule_judge
from cigeval.testing.samples_factory import seven_task_samples


def write_samples(folder: Path, count: int) -> Path:
    base = seven_task_samples(folder)
    path = folder / "samples.jsonl"
    with path.open("w") as handle:
        for n in range(count):
            sample = dict(base[n % len(base)], id=f"s{n}")
            handle.write(json.dumps(sample) + "\n")
    return path


class InstantJudge:
    """Answers like :func:`rule_judge` at once. Unlike ScriptedBackend it keeps no record of
    the requests, which would otherwise be the memory growing here."""

    identity = "bench:instant"

    def __init__(self) -> None:
        self.reply = rule_judge()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(self.reply(request), self.identity, Usage(100, 20))


async def stream(path: Path, out: Path, concurrency: int, marks: set[int]) -> None:
    evaluator = Evaluator(InstantJudge(), run_config=RunConfig(use_cache=False, preflight=False))
    started = time.perf_counter()
    done = errors = 0
    with ResultsWriter(out, resume=False) as writer:
        async for score in evaluator.stream(iter_samples_file(path), concurrency):
            writer.write(score)
            done += 1
            errors += score.status != "ok"
            if done in marks:
                print(
                    f"{done:>7} samples  peak RSS {peak_rss_mib():7.1f} MiB  "
                    f"{done / (time.perf_counter() - started):6.1f} samples/s  errors {errors}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cigeval-memory-"))
    path = write_samples(folder, args.samples)
    print(f"before the run: peak RSS {peak_rss_mib():.1f} MiB (imports)")
    marks = {m for m in (100, 1000, 2500, 5000, 7500, 10_000) if m <= args.samples}
    marks.add(args.samples)
    asyncio.run(stream(path, folder / "results.jsonl", args.concurrency, marks))
    size = (folder / "results.jsonl").stat().st_size / 1e6
    print(f"results file: {size:.1f} MB (with traces), samples file read lazily")


if __name__ == "__main__":
    main()
