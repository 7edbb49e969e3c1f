"""Shared helpers of the benchmarks: sample sets, an evaluator on a server, timing."""

from __future__ import annotations

import os
import resource
import socket
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cigeval.sample import Sample, sample_from_dict  # noqa: E402
from cigeval.testing.samples_factory import seven_task_samples, variant  # noqa: E402


def sample_dicts(folder: Path, count: int, tag: str = "") -> list[dict[str, Any]]:
    """``count`` samples (as samples-file lines) cycling through the seven tasks, distinct
    ids and wording, their images written to ``folder``."""
    base = seven_task_samples(folder)
    out = []
    for n in range(count):
        sample = base[n % len(base)]
        out.append(variant(sample, f"{tag}{sample['id']}-{n}", f" #{tag}{n}"))
    return out


def samples(folder: Path, count: int, tag: str = "") -> list[Sample]:
    """:func:`sample_dicts` as :class:`Sample` objects."""
    return [sample_from_dict(d, base_dir=folder) for d in sample_dicts(folder, count, tag)]


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
