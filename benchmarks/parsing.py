"""Parsing time of long hostile replies: linear in the reply's length.

    python benchmarks/parsing.py [--sizes 25000 100000 400000 1600000]

Each reply is a shape that made JSON scanning quadratic before (a decode attempt from every
bracket to the end of the reply, and an error message built from the reply's start each
time): brackets inside a string, deep unterminated lists, deep lists when an object is
wanted, and, for contrast, a well-formed judgement after a long prose preamble. For each
size the script prints the time of ``extract_json`` (best of three) and the ratio to the
previous size: linear scanning gives a ratio close to the size ratio (4), quadratic about 16.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

from cigeval.errors import ParseError
from cigeval.parsing import extract_json, parse_judgement

SHAPES: dict[str, Callable[[int], str]] = {
    "brackets in a string": lambda n: '["[' * (n // 3),
    "deep unterminated lists": lambda n: "[" * 900 + "1," * (n // 2),
    "deep lists, object wanted": lambda n: "[" * 900 + "1," * (n // 2) + "1" + "]" * 900,
    "prose [1] then JSON": lambda n: "See [1] and [2]. " * (n // 17) + '{"score": 7}',
}


def seconds(text: str, parse: Callable[[str], object]) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        with contextlib.suppress(ParseError):
            parse(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[25_000, 100_000, 400_000, 1_600_000]
    )
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; best of 3; ratio = time / time at the previous size")
    print(f"{'reply shape':28} " + " ".join(f"{n:>16,}" for n in args.sizes))
    parsers: dict[str, Callable[[str], object]] = {
        "extract_json": lambda text: extract_json(text, dict),
        "parse_judgement": parse_judgement,
    }
    for name, make in SHAPES.items():
        for parser_name, parse in parsers.items():
            cells, previous = [], None
            for size in args.sizes:
                taken = seconds(make(size), parse)
                ratio = f" x{taken / previous:4.1f}" if previous else "      "
                cells.append(f"{taken * 1000:8.1f} ms{ratio}")
                previous = taken
            print(f"{name[:20] + ' ' + parser_name[:7]:28} " + " ".join(cells))


if __name__ == "__main__":
    main()
