"""Shared helpers of the benchmarks: sample sets, an evaluator on a server, timing."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cigeval.sample import Sample, sample_from_dict  # noqa: E402
from tests.samples_factory import seven_task_samples  # noqa: E402


def samples(folder: Path, count: int, tag: str = "") -> list[Sample]:
    """``count`` samples cycling through the seven tasks, distinct ids and wording."""
    base = seven_task_samples(folder)
    out = []
    for n in range(count):
        sample = dict(base[n % len(base)])
        sample["id"] = f"{tag}{sample['id']}-{n}"
        for field in ("prompt", "instruction"):
            if field in sample:
                sample[field] = f"{sample[field]} #{tag}{n}"
        out.append(sample_from_dict(sample, base_dir=folder))
    return out


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
