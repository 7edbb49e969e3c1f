"""Does the crop Zoom sends the judge hold the planted edit? Measured on the planted-edit set.

    python benchmarks/zoom_crops.py [--count 600] [--seed 0] [--size 512] [--robust]
                                    [--diff SETTINGS_JSON]

The pairs are judged as text-guided edits (no mask) through the OpenAI HTTP path against a
local fake judge whose planner chooses Zoom for edit success, under ``extended`` (Difference
finds the region: ``--robust`` uses the noise-robust Difference, ``--diff`` any other
Difference settings); every crop is read back from the requests the server received and
checked against the original pixels (``cigeval.testing.zoom_check``). Printed: the share of
planted regions (each edit made, each unrequested change) that a crop holds whole, how large
the windows are and how much they are enlarged, and what the failed and regenerated pairs got.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cigeval.testing.zoom_check import check_zoom  # noqa: E402


def main() -> None:
    """Run the check and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=600, help="pairs drawn (default: 600)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=512, help="picture side (default: 512)")
    parser.add_argument("--robust", action="store_true", help="the noise-robust Difference")
    parser.add_argument("--diff", default="{}", help="more Difference settings, as JSON")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    difference = json.loads(args.diff) | ({"robust": True} if args.robust else {})
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        settings = {"difference": difference}
        check = check_zoom(args.count, Path(folder), seed=args.seed, size=args.size,
                           settings=settings, concurrency=args.concurrency)  # fmt: skip
    seconds = time.perf_counter() - started
    print(f"pairs {sum(check.pairs.values())} (seed {args.seed}, {args.size} px), "
          f"Difference {difference or 'extended defaults'}, {seconds:.0f} s")  # fmt: skip
    print(f"planted regions held whole by a crop: {check.contained}/{check.regions} "
          f"= {check.share:.1%}")  # fmt: skip
    edited = check.pairs.get("edit", 0) + check.pairs.get("over_edit", 0)
    print(f"locally edited pairs without a crop: {check.no_crop}/{edited}; "
          f"crops whose pixels were not their window: {check.unverified}")  # fmt: skip
    if check.window_shares:
        shares, zooms = sorted(check.window_shares), sorted(check.zooms)
        print(f"window share of the image: median {statistics.median(shares):.3f}, "
              f"90th percentile {shares[int(0.9 * (len(shares) - 1))]:.3f}; enlargement: "
              f"median {statistics.median(zooms):.1f}x")  # fmt: skip
    for kind in ("failed", "regenerated"):
        given, total = check.with_crop.get(kind, 0), check.pairs.get(kind, 0)
        print(f"{kind} pairs given a crop: {given}/{total}")


if __name__ == "__main__":
    main()
