"""How ``--batch`` groups an agent's calls: batches per stage and calls per batch.

Runs N samples cycling through the seven tasks through the cigeval agent (tools Difference
and Scene Graph, two rounds, so a sample makes 3 to 6 dependent calls) against the batch
test double on 127.0.0.1 (``cigeval/testing/batch_server.py``: OpenAI files + batches endpoints,
answering with ``cigeval.rule_judge``), and prints, per run, each stage's batches with their
request counts and the wall time. The double answers a batch on its second status check,
so wall time is cigeval's own work plus two polls per stage, not a provider's queue.

    python benchmarks/batch_stages.py [--samples 70 700 2100] [--batch-samples 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import samples

from cigeval.config import RunConfig
from cigeval.evaluation import Evaluator
from cigeval.testing import request_text, rule_judge
from cigeval.testing.batch_server import FakeBatchServer


def _kind(body: dict[str, object]) -> str:
    text = request_text(body)
    if "### Questions" in text:
        return "plan"
    if "RULES:" in text:
        return "judge-r2" if "Round 2" in text else "judge"
    return "scene-graph"


def run(count: int, batch_samples: int, poll_s: float, folder: Path) -> None:
    """Evaluate ``count`` samples under batch and print the batches of each stage."""
    judge = rule_judge(
        tools={
            "edit_success": "Difference",
            "over_editing": "Difference",
            "subject_similarity": "Scene Graph",
        },
        request_tool="Difference",
    )
    items = samples(folder / f"s{count}", count)
    with FakeBatchServer(judge) as server:
        config = RunConfig(
            batch=True,
            batch_poll_s=poll_s,
            batch_samples=batch_samples,
            cache_dir=folder / f"cache{count}",
        )
        evaluator = Evaluator(
            f"openai:judge-model@{server.base_url}",
            run_config=config,
            tools=("Difference", "Scene Graph"),
            max_rounds=2,
        )
        started = time.perf_counter()
        scores = evaluator.evaluate_many(items)
        wall = time.perf_counter() - started
    assert evaluator.batch is not None
    stats = evaluator.batch.stats
    errors = sum(1 for s in scores if not s.ok)
    calls = sum(len(b.lines) for b in server.batches)
    print(
        f"{count} samples (batch_samples={batch_samples}): {calls} calls in "
        f"{len(server.batches)} batches, {calls / count:.2f} calls/sample, errors {errors}, "
        f"wall {wall:.1f} s"
    )
    for stage, sizes in stats.stages().items():
        batch = next(b for b in server.batches if b.id == _batch_of_stage(stats, stage))
        kinds = Counter(_kind(line["body"]) for line in batch.lines)
        mix = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        print(f"   stage {stage}: {len(sizes)} batch(es) of {sizes} calls  (first: {mix})")


def _batch_of_stage(stats: object, stage: int) -> str:
    return next(b.id for b in stats.batches if b.stage == stage)  # type: ignore[attr-defined]


def main() -> None:
    """Parse the arguments and run each sample count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[70, 700, 2100])
    parser.add_argument("--batch-samples", type=int, default=1000)
    parser.add_argument("--poll", type=float, default=0.05, help="seconds between checks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for count in args.samples:
            run(count, args.batch_samples, args.poll, Path(folder))


if __name__ == "__main__":
    main()
