"""Reading samples from a Hugging Face dataset vs from a samples JSONL of the same files.

Writes N text-guided editing samples (two PNG images each) as files named in a JSONL and as a
dataset saved with ``save_to_disk``, then times, for each route:

- *ready*: every sample validated and its images decoded (``load_sample_images``), what the
  pipeline does before the judge is asked;
- *skip*: a resumed run whose results file holds every id (what it costs to find that
  nothing is left to do).

Run: ``python benchmarks/dataset_samples.py [--samples 500] [--size 512]``. Needs the
``datasets`` extra; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import datasets
import numpy as np
from PIL import Image

from cigeval.hf_datasets import dataset_samples
from cigeval.runs.pending import PendingCounts, pending_samples
from cigeval.sample import iter_samples_file, load_sample_images, sample_from_dict


def build(folder: Path, count: int, size: int) -> tuple[Path, Path]:
    """The samples as files + JSONL, and as a saved dataset."""
    rng = np.random.default_rng(0)
    rows, lines = [], []
    for index in range(count):
        names = []
        for role in ("source", "output"):
            pixels = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
            path = folder / f"{index}_{role}.png"
            Image.fromarray(pixels).save(path)
            names.append(path)
        lines.append(
            f'{{"id": "s{index}", "task": "text_guided_ie", "instruction": "edit it", '
            f'"images": {{"source": "{names[0].name}", "output": "{names[1].name}"}}}}\n'
        )
        rows.append(
            {"id": f"s{index}", "edit": "edit it", "before": str(names[0]), "after": str(names[1])}
        )
    jsonl = folder / "samples.jsonl"
    jsonl.write_text("".join(lines))
    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "edit": datasets.Value("string"),
            "before": datasets.Image(),
            "after": datasets.Image(),
        }
    )
    saved = folder / "saved"
    datasets.Dataset.from_list(rows, features=features).save_to_disk(str(saved))
    return jsonl, saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--size", type=int, default=512)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, saved = build(Path(tmp), args.samples, args.size)
        columns = {"id": "id", "instruction": "edit", "source": "before", "output": "after"}

        def from_dataset() -> object:
            dataset = datasets.load_from_disk(str(saved))
            return dataset_samples(dataset, columns, task="text_guided_ie")

        timings: dict[str, dict[str, float]] = {}
        for route, source in (
            ("jsonl", lambda: iter_samples_file(jsonl)),
            ("dataset", from_dataset),
        ):
            started = time.perf_counter()
            for item in source():  # type: ignore[attr-defined]
                sample = item.sample if hasattr(item, "sample") else sample_from_dict(item)
                load_sample_images(sample)
            ready = time.perf_counter() - started
            finished = {f"s{i}" for i in range(args.samples)}
            started = time.perf_counter()
            left = list(pending_samples(source(), finished, None, PendingCounts()))  # type: ignore[arg-type]
            skip = time.perf_counter() - started
            assert not left
            timings[route] = {"ready": ready, "skip": skip}
        print(f"{args.samples} samples, two {args.size}x{args.size} PNG images each")
        for route, figures in timings.items():
            rate = args.samples / figures["ready"]
            print(
                f"  {route:<8} ready {figures['ready']:6.2f} s ({rate:7.1f} samples/s)   "
                f"skip all {figures['skip'] * 1000:8.1f} ms"
            )
        ratio = timings["dataset"]["ready"] / timings["jsonl"]["ready"]
        print(f"  dataset / jsonl time to ready samples: {ratio:.2f}")


if __name__ == "__main__":
    main()
