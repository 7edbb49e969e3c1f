"""A judge server killed mid-run: how long until the run stops, and what it leaves.

Starts ``benchmarks/fake_server.py`` in its own process, runs ``cigeval evaluate`` on it in
another, kills the server (SIGKILL) once a few records are written, and prints the time from
the kill to the end of the run, its exit status and the records in ``--out``. Extra flags go
to ``cigeval evaluate`` (e.g. ``--circuit-breaker 0`` for the run without the breaker, or
``--max-retries 2``).

    python benchmarks/dead_server.py [--samples 200] [--concurrency 8] [-- EXTRA FLAGS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import sample_dicts  # noqa: E402
from benchmarks.fake_server import ServerProcess  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--kill-after", type=int, default=5, help="records before the kill")
    parser.add_argument("extra", nargs="*", help="more `cigeval evaluate` flags (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        path = work / "samples.jsonl"
        lines = sample_dicts(work, args.samples)
        path.write_text("".join(json.dumps(s) + "\n" for s in lines), encoding="utf-8")
        out = work / "out.jsonl"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-bench",
               "CIGEVAL_CACHE_DIR": str(work / "cache")}  # fmt: skip
        with ServerProcess(0.05) as server:
            command = [
                sys.executable, "-m", "cigeval", "evaluate", str(path), "--model",
                "openai:bench-model", "--base-url", server.url, "--out", str(out), "--quiet",
                "--no-preflight", "--tools", "Difference", "--concurrency",
                str(args.concurrency), *args.extra,
            ]  # fmt: skip
            run = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
            while not (out.exists() and out.read_bytes().count(b"\n") >= args.kill_after):
                time.sleep(0.01)
            assert server.process is not None
            server.process.kill()
            killed = time.monotonic()
            _, err = run.communicate()
            stopped = time.monotonic() - killed
        records = [json.loads(line) for line in out.read_text().splitlines()]
        errors = sum(1 for r in records if r["status"] == "error")
        print(f"flags: --concurrency {args.concurrency} {' '.join(args.extra)}".rstrip())
        print(f"samples {args.samples}, killed after {args.kill_after} records")
        print(f"stopped {stopped:.1f} s after the kill, exit status {run.returncode}")
        print(f"records {len(records)} ({errors} error), not judged {args.samples - len(records)}")
        kinds: dict[str, int] = {}
        for record in records:
            if record["status"] == "error":
                key = str(record.get("error_kind"))
                kinds[key] = kinds.get(key, 0) + 1
        print(f"error kinds: {kinds}")
        print("".join("e" if r["status"] == "error" else "." for r in records))
        for record in records:
            if record["status"] == "error" and not record.get("error_kind"):
                print("an error of no kind:", record["error"][:400])
                break
        print(err.strip().splitlines()[-1][:300])


if __name__ == "__main__":
    main()
