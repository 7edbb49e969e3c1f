"""Which samples a run still has to judge: what the results file lacks, each id once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cigeval.sample import SampleLine, sample_identity
from cigeval.terminal import echo, safe_text


@dataclass
class PendingCounts:
    """What :func:`pending_samples` left out: ids already recorded, and repeated ids."""

    skipped: int = 0
    duplicates: int = 0


def pending_samples(
    items: Iterable[Any], finished: set[str], limit: int | None, counts: PendingCounts
) -> Iterator[Any]:
    """The items still to judge: ids in ``finished`` are skipped, and a repeated id is
    judged once (its first occurrence; each repeat is reported, never silent).

    ``limit`` keeps the first ``limit`` distinct samples of ``items``, finished or not: a
    rerun with the same limit completes those same samples, wherever an earlier run stopped.
    """
    seen: set[str] = set()
    for position, item in enumerate(items, start=1):
        sample_id = sample_identity(item)[0]
        if sample_id in seen:
            counts.duplicates += 1
            where = (
                f"on line {item.line_number}"
                if isinstance(item, SampleLine)
                else f"at item {position}"
            )
            echo(
                f"warning: sample id {safe_text(repr(sample_id))} repeated {where}; "
                "only its first occurrence is evaluated"
            )
            continue
        if limit is not None and len(seen) >= limit:
            return
        seen.add(sample_id)
        if sample_id in finished:
            counts.skipped += 1
            continue
        yield item


def count_lines(path: Path) -> int:
    """Non-blank lines of a file, read as bytes (a bad byte must not stop the count)."""
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def expected_total(
    samples: Iterable[Any] | Path, finished: set[str], limit: int | None
) -> int | None:
    """About how many samples the run will judge (for the progress bar), None if unknown."""
    if isinstance(samples, Path):
        total: int | None = count_lines(samples)
    elif isinstance(samples, Sized):
        total = len(samples)
    else:
        total = None
    if total is None:
        return None
    if limit is not None:
        total = min(total, limit)
    return max(0, total - len(finished))
