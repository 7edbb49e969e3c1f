"""A fully cached re-run of ``cigeval evaluate`` against the first run: whole-process CPU.

    python benchmarks/cached_rerun.py [--samples 203] [--runs 3] [--size 512]
        [--compare OTHER_CHECKOUT] [--importtime]

Each round makes a fresh response cache, runs ``cigeval evaluate`` on the samples (the first
run, every answer asked of ``benchmarks/fake_server.py --light``), then runs it again with a
new ``--out`` and the same cache (the re-run: every answer cached, no request reaches the
server). Both are whole ``python -m cigeval`` processes, start-up included; CPU is the
child's user + system time. Prints each round, then min / median / max of both and of their
ratio (target of issue 33: re-run <= 0.25x the first run). ``--compare`` measures another
checkout the same way, alternating with this one. ``--importtime`` adds the modules a
cached re-run imports, slowest first (``python -X importtime``, cumulative).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

MODEL = "bench-model"


def evaluate(
    checkout: Path, url: str, samples: Path, out: Path, cache: Path, extra: list[str]
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """One ``cigeval evaluate`` process: (CPU seconds, wall seconds, the finished process)."""
    command = [
        sys.executable,
        *extra,
        "-m",
        "cigeval",
        "evaluate",
        str(samples),
        "--model",
        f"openai:{MODEL}@{url}",
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
        "--concurrency",
        "16",
        "--quiet",
        "--no-preflight",  # no Grounding weights offline; the server is known to be up
    ]
    env = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # Run from the results' folder: `python -m` puts the working directory first on the path,
    # and a checkout there would shadow the one PYTHONPATH names.
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=out.parent, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"cigeval evaluate failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done


def one_round(checkout: Path, url: str, samples: Path, folder: Path) -> dict[str, float]:
    """First run into a fresh cache, then the fully cached re-run into a new results file."""
    cache = folder / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    first_cpu, first_wall, _ = evaluate(checkout, url, samples, folder / "first.jsonl", cache, [])
    again_cpu, again_wall, _ = evaluate(checkout, url, samples, folder / "again.jsonl", cache, [])
    for name in ("first.jsonl", "again.jsonl"):
        (folder / name).unlink()
    return {
        "first_cpu": first_cpu,
        "first_wall": first_wall,
        "again_cpu": again_cpu,
        "again_wall": again_wall,
    }


def import_profile(checkout: Path, url: str, samples: Path, folder: Path, top: int) -> list[str]:
    """The slowest imports (cumulative) of a fully cached re-run, as ``-X importtime`` says."""
    cache = folder / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    evaluate(checkout, url, samples, folder / "first.jsonl", cache, [])
    _, _, done = evaluate(
        checkout, url, samples, folder / "again.jsonl", cache, ["-X", "importtime"]
    )
    rows = []
    total = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        # "import time: <self us> | <cumulative us> | <indented module name>"
        _, cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((int(cumulative), name.rstrip()))
        if not name.startswith("  "):  # a top-level import (one space after the bar)
            total += int(cumulative)
    rows.sort(reverse=True)
    lines = [f"imports of a fully cached re-run: {total / 1e6:.2f} s in all (top level)"]
    lines += [f"  {us / 1000:8.1f} ms  {name.strip()}" for us, name in rows[:top]]
    return lines


def spread(values: list[float]) -> str:
    """min / median / max."""
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=203)
    parser.add_argument("--runs", type=int, default=3, help="rounds (>= 3 for a median)")
    parser.add_argument("--size", type=int, default=512, help="side of the images")
    parser.add_argument("--compare", type=Path, default=None, help="another checkout")
    parser.add_argument("--importtime", action="store_true", help="list the slowest imports")
    parser.add_argument("--top", type=int, default=25, help="imports listed")
    args = parser.parse_args()

    from client_overhead import write_sample_set
    from fake_server import ServerProcess

    folder = Path(tempfile.mkdtemp(prefix="cigeval-cached-rerun-"))
    samples = write_sample_set(folder / "set", args.samples, args.size)
    checkouts = {"this": ROOT}
    if args.compare:
        checkouts["before"] = args.compare.resolve()
    found: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    with ServerProcess(0.05, light=True) as server:
        for round_number in range(args.runs):
            names = list(checkouts)
            if round_number % 2:
                names.reverse()
            for name in names:
                figures = one_round(checkouts[name], server.url, samples, folder)
                found[name].append(figures)
                print(
                    f"  round {round_number + 1} {name:6}: first {figures['first_cpu']:.2f} s "
                    f"CPU ({figures['first_wall']:.2f} s wall), re-run "
                    f"{figures['again_cpu']:.2f} s CPU ({figures['again_wall']:.2f} s wall), "
                    f"{figures['again_cpu'] / figures['first_cpu']:.2f}x",
                    flush=True,
                )
        print()
        print(
            f"{args.samples} samples ({args.size}² photo-like PNGs), cigeval evaluate "
            f"--concurrency 16, python {sys.version.split()[0]}, {os.cpu_count()} CPU cores; "
            "whole-process CPU s, min / median / max"
        )
        for name, rounds in found.items():
            first = [r["first_cpu"] for r in rounds]
            again = [r["again_cpu"] for r in rounds]
            ratio = [r["again_cpu"] / r["first_cpu"] for r in rounds]
            print(
                f"{name:6} first run {spread(first)}   cached re-run {spread(again)}   "
                f"ratio {spread(ratio)}"
            )
        if args.importtime:
            print()
            print("\n".join(import_profile(ROOT, server.url, samples, folder, args.top)))
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
