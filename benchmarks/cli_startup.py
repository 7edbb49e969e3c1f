"""CPU seconds of ``cigeval`` commands that should answer at once: the help pages and ``tasks``.

    python benchmarks/cli_startup.py [--repeats 7]

Each command runs in a fresh ``python -m cigeval`` process (this checkout's code first on the
path), ``--repeats`` times, alternating between the commands; the figure is the user plus
system CPU time of the child process, so other work on the machine changes it less than wall
time. Printed: min, median and max per command, and the modules a run of each loaded that
are heavy (numpy, PIL, pandas, scipy, langgraph, ...), which is where start-up time goes.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The commands measured, as argument lists of ``cigeval``.
COMMANDS = (["--help"], ["tasks"], ["evaluate", "--help"])
#: Modules whose presence after a command shows it loaded more than it needed.
HEAVY = ("numpy", "PIL", "pandas", "scipy", "langgraph", "openai", "tqdm", "jinja2", "pydantic")


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of one ``python -m cigeval ARGV`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "cigeval", *argv],
        check=True,
        stdout=subprocess.DEVNULL,
        env=_environment(),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_modules(argv: list[str]) -> list[str]:
    """The modules of :data:`HEAVY` loaded by the time ``cigeval ARGV`` returns."""
    program = (
        "import contextlib, io, sys\nfrom cigeval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        check=True,
        capture_output=True,
        text=True,
        env=_environment(),
    )
    return done.stdout.split()


def _environment() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)}


def main() -> None:
    """Measure every command and print one line per command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command")
    args = parser.parse_args()
    timings: dict[str, list[float]] = {" ".join(c): [] for c in COMMANDS}
    for argv in COMMANDS:  # warm the file cache and the bytecode once
        cpu_seconds(argv)
    for _ in range(args.repeats):
        for argv in COMMANDS:
            timings[" ".join(argv)].append(cpu_seconds(argv))
    print(f"CPU seconds per command, {args.repeats} runs each; python {sys.version.split()[0]}")
    print(f"{'command':24} {'min':>6} {'median':>7} {'max':>6}  heavy modules loaded")
    for argv in COMMANDS:
        name = " ".join(argv)
        runs = timings[name]
        heavy = " ".join(heavy_modules(argv)) or "-"
        print(
            f"cigeval {name:16} {min(runs):6.3f} {statistics.median(runs):7.3f} "
            f"{max(runs):6.3f}  {heavy}"
        )


if __name__ == "__main__":
    main()
