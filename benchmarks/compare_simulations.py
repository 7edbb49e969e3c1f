"""How the paired comparison behaves on simulated experiments with a known true difference.

    python benchmarks/compare_simulations.py [--sims 2000] [--pairs 300] [--bootstrap 1000]

For each setting, runs ``--sims`` seeded experiments of ``--pairs`` conditions through
cigeval's paired statistics (cigeval/testing/simulate.py) and prints: how often the paired
95% interval covered the true difference, how often it excluded zero, how often the signed-rank
test rejected at 5%, how often the two generators' independent 95% intervals overlapped, and
the time per experiment. Also times ``cigeval.compare`` on 8 generators x 1,000 conditions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cigeval import compare
from cigeval.testing.simulate import simulate

SETTINGS = (
    ("continuous", 0.0, "no difference"),
    ("discrete", 0.0, "no difference, 0-10 scores (many ties)"),
    ("continuous", 0.03, "true difference 0.03"),
    ("discrete", 0.04, "latent shift 0.04, 0-10 scores"),
    ("continuous", 0.05, "true difference 0.05"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    print(f"{args.sims} experiments of {args.pairs} pairs, {args.bootstrap} bootstrap resamples")
    print(f"{'setting':<42} {'coverage':>8} {'CI excl. 0':>10} {'test p<.05':>10} "
          f"{'indep. overlap':>14} {'ms/exp':>7}")  # fmt: skip
    for seed, (kind, delta, name) in enumerate(SETTINGS, start=10):
        started = time.perf_counter()
        rates = simulate(kind, args.pairs, delta, args.sims, seed, args.bootstrap, independent=True)
        ms = (time.perf_counter() - started) / args.sims * 1000
        figures = (
            f"{rates.coverage:>8.3f} {rates.interval_excludes_zero:>10.3f} "
            f"{rates.test_rejects:>10.3f} {rates.independent_overlap:>14.3f} {ms:>7.1f}"
        )
        print(f"{name:<42} {figures}")
    rng = np.random.default_rng(0)
    records = [
        {"id": f"g{g}-{c}", "task": f"task{c % 7}", "model": f"g{g}", "status": "ok",
         "score": float(np.clip(rng.normal(0.5 + 0.01 * g, 0.2), 0, 1)),
         "conditions": {"prompt": f"p{c}"}}
        for g in range(8) for c in range(1000)
    ]  # fmt: skip
    started = time.perf_counter()
    compare(records, "g0", n_boot=2000)
    print(
        f"compare(): 8 generators x 1,000 conditions x 7 tasks, 2,000 resamples, "
        f"Bradley-Terry included: {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
