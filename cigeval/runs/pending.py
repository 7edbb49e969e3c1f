"""Which samples a run still has to judge: what the results file lacks (or holds for images
that changed since), each id once; a runaway text is refused as that sample's error."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval._regular_file import MAX_IMAGE_BYTES, open_regular
from cigeval.sample import Sample, SampleLine, sample_identity
from cigeval.sample_files import changed_roles, image_file_hashes
from cigeval.terminal import echo, safe_text


@dataclass
class PendingCounts:
    """What :func:`pending_samples` left out: ids already recorded, and repeated ids; which
    recorded samples it handed on again because an image changed; and the items it handed on
    (by id, until their records are written)."""

    skipped: int = 0
    duplicates: int = 0
    #: Recorded samples judged again: an image file changed since their record.
    rechecked: list[str] = field(default_factory=list)
    #: Recorded samples kept without hashing their images (``recheck_images`` off).
    unchecked: int = 0
    items: dict[str, Any] = field(default_factory=dict)
    #: Where each item handed on stands in the input (by id, until its record is written):
    #: its line of the samples file (its row of a dataset), else its 1-based position.
    positions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PendingRules:
    """How :func:`pending_samples` treats recorded samples and long texts."""

    #: The image hashes of the recorded samples (``ResultsWriter.previous_images``).
    previous_images: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: Judge again a recorded sample whose image files changed (else keep its record).
    recheck_images: bool = True
    #: The most characters a text field may hold (None: no cap).
    max_text_chars: int | None = None
    #: Image files larger than this are not hashed (``--max-image-bytes``).
    max_image_bytes: int = MAX_IMAGE_BYTES


def pending_samples(
    items: Iterable[Any],
    finished: set[str],
    limit: int | None,
    counts: PendingCounts,
    rules: PendingRules | None = None,
) -> Iterator[Any]:
    """The items still to judge: ids in ``finished`` are skipped, and a repeated id is
    judged once (its first occurrence; each repeat is reported, never silent).

    ``limit`` keeps the first ``limit`` distinct samples of ``items``, finished or not: a
    rerun with the same limit completes those same samples, wherever an earlier run stopped.
    ``rules`` (:class:`PendingRules`): a finished sample whose image files hash otherwise
    than its record says is handed on again (and said so on stderr); a sample with a text
    longer than the cap is handed on as an error saying so.
    """
    rules = rules or PendingRules()
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
        if sample_id in finished and not _image_changed(item, sample_id, rules, counts):
            counts.skipped += 1
            continue
        if rules.max_text_chars is not None:
            item = _capped(item, position, rules.max_text_chars)
        counts.items[sample_id] = item
        counts.positions[sample_id] = item.line_number if isinstance(item, SampleLine) else position
        yield item


def _image_changed(item: Any, sample_id: str, rules: PendingRules, counts: PendingCounts) -> bool:
    """True when a recorded sample's image files changed since its record (said on stderr)."""
    if not rules.recheck_images:
        counts.unchecked += 1
        return False
    before = rules.previous_images.get(sample_id)
    if not before:
        return False  # a record written before image hashes were kept: nothing to compare
    now = image_file_hashes(item, rules.max_image_bytes)
    changed = changed_roles(dict(before), now) if now else []  # none hashed: nothing to compare
    if not changed:
        return False
    counts.rechecked.append(sample_id)
    keep = in_callers_words("--no-recheck-images", "recheck_images=False")
    echo(
        f"sample {safe_text(repr(sample_id))}: image(s) {safe_text(', '.join(changed))} "
        f"changed since it was judged; judging it again ({keep} keeps the record)"
    )
    return True


def _capped(item: Any, position: int, cap: int) -> Any:
    """``item``, or an error line in its place when one of its texts is longer than ``cap``."""
    if isinstance(item, SampleLine):
        sample, line_number, raw = item.sample, item.line_number, item.raw
    elif isinstance(item, Sample):
        sample, line_number, raw = item, position, {"id": item.id, "task": item.task}
    else:
        return item  # a dict is validated by the evaluator
    if sample is None:
        return item
    long = {name: len(text) for name, text in sample.text_fields().items() if len(text) > cap}
    if not long:
        return item
    name, length = next(iter(long.items()))
    option = in_callers_words("--max-text-chars", "max_text_chars")
    error = (
        f"{name} has {length} characters, more than {option} {cap}: refused rather than "
        f"sent to the judge (raise {option} to judge it)"
    )
    return SampleLine(line_number=line_number, raw=raw, error=error)


def count_lines(path: Path) -> int:
    """Non-blank lines of a file, read as bytes (a bad byte must not stop the count)."""
    with open_regular(path) as handle:
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
