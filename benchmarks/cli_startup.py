"""CPU seconds of ``cigeval`` commands that should answer at once: the help pages and ``tasks``.

    python benchmarks/cli_startup.py [--repeats 7] [--compare /path/to/other/checkout]

Each command runs in a fresh ``python -m cigeval`` process (a checkout's code first on the
path), ``--repeats`` times, alternating between the commands (and the checkouts, with
``--compare``); the figure is the user plus system CPU time of the child process, so other
work on the machine changes it less than wall time. Printed: min, median and max per command,
and the heavy modules (numpy, PIL, pandas, scipy, langgraph, ...) a run of each loaded, which
is where start-up time goes.
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


def cpu_seconds(checkout: Path, argv: list[str]) -> float:
    """User + system CPU seconds of one ``python -m cigeval ARGV`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "cigeval", *argv],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=checkout,  # ``-m`` puts the working folder first on the path
        env=_environment(checkout),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_modules(checkout: Path, argv: list[str]) -> list[str]:
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
        cwd=checkout,
        env=_environment(checkout),
    )
    return done.stdout.split()


def _environment(checkout: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{checkout}{os.pathsep}{path}" if path else str(checkout)}


def main() -> None:
    """Measure every command (in each checkout) and print one line per command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command")
    parser.add_argument("--compare", type=Path, help="another checkout, measured alternately")
    args = parser.parse_args()
    checkouts = [ROOT, *([args.compare.resolve()] if args.compare else [])]
    timings: dict[tuple[Path, str], list[float]] = {}
    for checkout in checkouts:  # warm the file cache and the bytecode once
        for argv in COMMANDS:
            cpu_seconds(checkout, argv)
    for _ in range(args.repeats):
        for argv in COMMANDS:
            for checkout in checkouts:
                seconds = cpu_seconds(checkout, argv)
                timings.setdefault((checkout, " ".join(argv)), []).append(seconds)
    print(f"CPU seconds per command, {args.repeats} runs each; python {sys.version.split()[0]}")
    for checkout in checkouts:
        print(f"--- {checkout}")
        print(f"{'command':24} {'min':>6} {'median':>7} {'max':>6}  heavy modules loaded")
        for argv in COMMANDS:
            runs = timings[(checkout, " ".join(argv))]
            heavy = " ".join(heavy_modules(checkout, argv)) or "-"
            print(
                f"cigeval {' '.join(argv):16} {min(runs):6.3f} {statistics.median(runs):7.3f} "
                f"{max(runs):6.3f}  {heavy}"
            )


if __name__ == "__main__":
    main()
