"""Fine-tuning data from evaluation traces (CIGEval paper §3.4).

Reads cigeval results records (each with a ``trace`` of events) and writes chat-format JSONL,
one conversation per line, in the layout TRL's ``SFTTrainer`` takes for vision-language
models: ``messages`` (role plus a list of ``{"type": "image"}`` / ``{"type": "text", "text":
...}`` parts, the judge's replies as assistant turns) and ``images`` (one file path per image
part, in order). ``format="text"`` writes each message's content as one string with an
``<image>`` placeholder where each image stood (the LLaMA-Factory / ms-swift layout).

**Conversations.** A model call whose messages continue an earlier call's conversation (a
multi-round sub-question: the judge's tool request, then the new observation) is folded into
it, so each sub-question comes out as one multi-turn conversation. A reply that could not be
used and was asked again is left out, with the re-ask, unless ``keep_retried``. ``per="call"``
writes one conversation per such chain of calls (the plan, each sub-question); ``per="sample"``
one per sample.

**Images** are resolved to files through the record's ``image_files`` (sha256 -> path: the
input file, or the image store ``cigeval evaluate`` keeps next to its results) and, for older
records, through an image store folder; each file's content hash is checked. A sample with an
image that cannot be found is not written: it is counted and listed in
:attr:`ExportReport.missing_images` instead. Paths are absolute unless ``relative_images``
(then relative to the output file's folder).

**Filters.** Like the paper, keep only trajectories whose score is close to the human score
(``max_diff``: |score - human| on the [0, 1] scale; the paper uses 0.3). The human score is the
record's own ``human`` field (a number on [0, 1], or a dict with one per dimension such as
``{"SC": 0.5}``) when present, else the shipped ImagenHub ratings. ``samples`` keeps one side
of a train/test split.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from cigeval._caller import in_callers_words
from cigeval.errors import InputError
from cigeval.image_store import ImageStore
from cigeval.messages import UNFINISHED_REASONS
from cigeval.meta.frames import record_uid, task_id
from cigeval.meta.record_ratings import record_human_score
from cigeval.meta.selection import Samples, Selection, selection_of
from cigeval.results.jsonl import last_record_per_id
from cigeval.trace import ModelCallEvent, Trace

if TYPE_CHECKING:
    import pandas as pd

Granularity = Literal["call", "sample"]
ExportFormat = Literal["trl", "text"]
IMAGE_PLACEHOLDER = "<image>"

#: One conversation turn: role and ordered parts, ("text", str) or ("image", image dict).
_Part = tuple[str, Any]
_Turn = tuple[str, tuple[_Part, ...]]


@dataclass(frozen=True)
class MissingImage:
    """An image a judge saw that the export could not find as a file."""

    record_id: str
    sha256: str
    label: str
    reason: str

    def __str__(self) -> str:
        label = f" ({self.label})" if self.label else ""
        return f"sample {self.record_id}: image {self.sha256[:12]}{label}: {self.reason}"


@dataclass
class ExportReport:
    """What an export wrote and what it skipped (reason -> number of samples)."""

    records: int = 0
    samples: int = 0
    conversations: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    missing_images: list[MissingImage] = field(default_factory=list)
    #: Records dropped because a later record has the same sample id (the last one counts).
    duplicates: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary."""
        return {
            "records": self.records,
            "samples": self.samples,
            "conversations": self.conversations,
            "skipped": dict(self.skipped),
            "duplicates": self.duplicates,
            "missing_images": [str(m) for m in self.missing_images],
        }


def record_score(record: Mapping[str, Any], dimension: str = "SC") -> float | None:
    """The record's score for a dimension (SC: ``dimensions.SC``, else ``score``)."""
    dims = record.get("dimensions") or {}
    value = dims.get(dimension)
    if value is None and dimension == "SC":
        value = record.get("score")
    return None if value is None else float(value)


# --- conversations -----------------------------------------------------------------------


def _turns(call: ModelCallEvent) -> list[_Turn]:
    turns = [(m.role, tuple(m.parts())) for m in call.messages]
    turns.append(("assistant", (("text", call.reply),) if call.reply else ()))
    return turns


def _key(turn: _Turn) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A comparable form of a turn: images compare by their content hash."""
    role, parts = turn
    return role, tuple(
        (kind, str(value.get("sha256")) if kind == "image" else value) for kind, value in parts
    )


def _keys(turns: list[_Turn]) -> list[Any]:
    return [_key(t) for t in turns]


def _is_prefix(short: list[Any], long: list[Any]) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


def _reasked(calls: list[ModelCallEvent]) -> set[int]:
    """Indices of the calls whose reply was unusable: a later call re-asks in their thread."""
    found = set()
    for i, call in enumerate(calls):
        asked = _keys(_turns(call))
        for later in calls[i + 1 :]:
            if (
                later.attempt == call.attempt + 1
                and later.purpose == call.purpose
                and later.question_id == call.question_id
                and later.round == call.round
                and _is_prefix(asked, _keys([(m.role, tuple(m.parts())) for m in later.messages]))
            ):
                found.add(i)
                break
    return found


def _without_failed(turns: list[_Turn], failed: set[tuple[Any, ...]]) -> list[_Turn]:
    """Drop each unusable reply and the re-ask after it from a conversation."""
    keys = _keys(turns)
    kept, index = [], 0
    while index < len(turns):
        if (tuple(keys[:index]), keys[index]) in failed:
            index += 2 if index + 1 < len(turns) and turns[index + 1][0] == "user" else 1
            continue
        kept.append(turns[index])
        index += 1
    return kept


@dataclass
class _Chain:
    """Calls that continue one conversation, and the conversation so far."""

    purpose: str
    question_id: str | None
    turns: list[_Turn]
    calls: int = 1


def _chains(calls: list[ModelCallEvent], keep_retried: bool) -> list[_Chain]:
    # A reply cut at the token limit (or by a filter) is asked again with the same messages
    # and a larger budget; it is never training material, even with keep_retried.
    calls = [c for c in calls if c.finish_reason not in UNFINISHED_REASONS]
    reasked = set() if keep_retried else _reasked(calls)
    failed = {(tuple(_keys(_turns(calls[i])[:-1])), _key(_turns(calls[i])[-1])) for i in reasked}
    chains: list[_Chain] = []
    for index, call in enumerate(calls):
        if index in reasked:
            continue
        turns = _without_failed(_turns(call), failed)
        keys = _keys(turns)
        for chain in chains:
            if _is_prefix(_keys(chain.turns), keys):
                chain.turns, chain.calls = turns, chain.calls + 1
                break
        else:
            chains.append(_Chain(call.purpose, call.question_id, turns))
    return chains


def _merge_sample(chains: list[_Chain]) -> list[_Turn]:
    """One conversation from a sample's chains, in order; a repeated system turn is dropped."""
    merged: list[_Turn] = []
    systems: set[Any] = set()
    for chain in chains:
        for turn in chain.turns:
            if turn[0] == "system":
                if _key(turn) in systems:
                    continue
                systems.add(_key(turn))
            merged.append(turn)
    return merged


# --- images ------------------------------------------------------------------------------


class _ImageFiles:
    """Finds the file of each image a record lists, checking its content hash once."""

    def __init__(self, store: ImageStore | None, base_dir: Path | None) -> None:
        self.store = store
        self.base_dir = base_dir
        self._checked: dict[tuple[str, str], str | None] = {}

    def find(self, record: Mapping[str, Any], sha256: str) -> tuple[Path | None, str]:
        """The image's file, or None and why not."""
        files = record.get("image_files")
        listed = files.get(sha256) if isinstance(files, dict) else None
        candidates: list[Path] = []
        if isinstance(listed, str) and listed:
            path = Path(listed).expanduser()
            if not path.is_absolute() and self.base_dir is not None:
                path = self.base_dir / path
            candidates.append(path)
        if self.store is not None:
            candidates += [self.store.path_for(sha256, m) for m in ("image/png", "image/jpeg")]
        if not candidates:
            return None, (
                "not listed in the record's image_files (a results file from before cigeval "
                "kept them?); pass the folder of the run's images with "
                f"{in_callers_words('--image-dir', 'image_dir=')}"
            )
        problems = []
        for path in candidates:
            problem = self._check(path, sha256)
            if problem is None:
                return path.resolve(), ""
            if path.exists() or path == candidates[0]:
                problems.append(problem)
        return None, "; ".join(problems) or "not found"

    def _check(self, path: Path, sha256: str) -> str | None:
        key = (str(path), sha256)
        if key not in self._checked:
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError as exc:
                self._checked[key] = f"cannot read {path}: {exc.strerror or exc}"
            else:
                self._checked[key] = (
                    None if digest == sha256 else f"{path} has changed since the run"
                )
        return self._checked[key]


# --- rows --------------------------------------------------------------------------------


def _content(parts: tuple[_Part, ...], fmt: ExportFormat) -> Any:
    if fmt == "text":
        return "".join(f"{IMAGE_PLACEHOLDER}\n" if k == "image" else v for k, v in parts)
    return [{"type": "image"} if k == "image" else {"type": "text", "text": v} for k, v in parts]


def _row(
    base: dict[str, Any],
    turns: list[_Turn],
    references: dict[str, str],
    fmt: ExportFormat,
) -> dict[str, Any]:
    images = [value for _, parts in turns for kind, value in parts if kind == "image"]
    return {
        **base,
        "messages": [{"role": role, "content": _content(parts, fmt)} for role, parts in turns],
        "images": [references[str(image.get("sha256"))] for image in images],
        "image_labels": [str(image.get("label", "")) for image in images],
    }


def _image_references(
    record: Mapping[str, Any],
    turns: list[_Turn],
    files: _ImageFiles,
    template: str | None,
    relative_to: Path | None,
    missing: list[MissingImage],
) -> dict[str, str] | None:
    """sha256 -> reference for every image of the conversation; None when one is missing."""
    references: dict[str, str] = {}
    ok = True
    for _, parts in turns:
        for kind, image in parts:
            sha = str(image.get("sha256")) if kind == "image" else ""
            if kind != "image" or sha in references:
                continue
            label = str(image.get("label", ""))
            needs_file = template is None or "{path" in template
            path, why = files.find(record, sha) if needs_file else (None, "")
            if needs_file and path is None:
                missing.append(MissingImage(str(record.get("id")), sha, label, why))
                ok = False
                continue
            location = str(path) if path is not None else ""
            if path is not None and relative_to is not None:
                location = os.path.relpath(path, relative_to)
            references[sha] = (
                location
                if template is None
                else template.format(sha256=sha, label=label, path=location)
            )
    return references if ok else None


class _HumanScores:
    """The human score of a record: its own ``human`` field, else the ImagenHub ratings."""

    def __init__(self, dimension: str, imagenhub: pd.DataFrame | None) -> None:
        self.dimension = dimension
        self.imagenhub = imagenhub

    def of(self, record: Mapping[str, Any]) -> float | None:
        own = record_human_score(record, self.dimension)
        if own is not None:
            return own
        if self.imagenhub is None:
            from cigeval.meta.human import load_human_ratings

            self.imagenhub = load_human_ratings(all_models=True)
        key = (task_id(str(record.get("task"))), str(record.get("model")), record_uid(record))
        if key not in self.imagenhub.index:
            return None
        return float(self.imagenhub.at[key, self.dimension])  # type: ignore[arg-type]


def _far_from_humans(
    record: Mapping[str, Any], humans: _HumanScores, max_diff: float
) -> str | None:
    """Why the record fails the human-agreement filter, or None when it passes."""
    score = record_score(record, humans.dimension)
    if score is None or math.isnan(score):
        return f"no {humans.dimension} score"
    try:
        reference = humans.of(record)
    except InputError:
        return "human rating not a number on [0, 1]"
    if reference is None or math.isnan(reference):
        return "no human rating"
    if abs(score - reference) > max_diff:
        return "too far from the human score"
    return None


def export_trajectories(
    records: Iterable[Mapping[str, Any]],
    out: str | Path | IO[str],
    per: Granularity = "call",
    max_diff: float | None = None,
    human: pd.DataFrame | None = None,
    dimension: str = "SC",
    samples: Samples | None = None,
    image_template: str | None = None,
    keep_retried: bool = False,
    fmt: ExportFormat = "trl",
    image_dir: str | Path | None = None,
    base_dir: str | Path | None = None,
    relative_images: bool = False,
) -> ExportReport:
    """Write chat-format fine-tuning JSONL from results records; return what was kept.

    One record per sample id is read, the last one written (a rerun's record replaces the
    earlier one; ``report.duplicates`` counts the others). Only records with status ``ok`` are
    exported. ``max_diff`` keeps a sample only if its score is within that distance of the
    human score (the record's ``human`` field, else ``human``: a frame indexed by task, model,
    uid as from :func:`cigeval.meta.load_human_ratings`, loaded when needed). ``samples``
    (task -> uids, e.g. ``split.subset('train')``, or task -> model -> uids) keeps only those
    samples or images. ``image_dir``: an image store folder searched for images the record
    does not list; ``base_dir``: the folder relative
    ``image_files`` paths start from (the results file's). ``image_template`` replaces the
    file paths with references built from ``{sha256}``, ``{label}`` and ``{path}``.
    """
    if per not in ("call", "sample"):
        raise InputError(f"unknown granularity {per!r}; use 'call' or 'sample'")
    if fmt not in ("trl", "text"):
        raise InputError(f"unknown format {fmt!r}; use 'trl' or 'text'")
    relative_to = None
    if relative_images:
        if not isinstance(out, str | Path):
            raise InputError("relative image paths need an output file to be relative to")
        relative_to = Path(out).resolve().parent
    files = _ImageFiles(
        ImageStore(image_dir) if image_dir is not None else None,
        Path(base_dir) if base_dir is not None else None,
    )
    humans = _HumanScores(dimension, human)
    wanted = None if samples is None else selection_of(samples)
    report = ExportReport()
    lines: list[str] = []
    read = [dict(record) for record in records]
    unique = last_record_per_id(read)
    report.duplicates = len(read) - len(unique)
    for record in unique:
        report.records += 1
        reason = _skip_reason(record, wanted, humans, max_diff)
        if reason is not None:
            report.skipped[reason] += 1
            continue
        try:
            trace = Trace.model_validate({"events": record.get("trace") or []})
        except ValidationError:
            report.skipped["unreadable trace"] += 1
            continue
        chains = _chains(trace.model_calls(), keep_retried)
        if not chains:
            report.skipped["no model calls in the trace"] += 1
            continue
        base = {
            "id": record.get("id"),
            "task": record.get("task"),
            "model": record.get("model"),
            "judge": record.get("judge"),
        }
        if per == "sample":
            conversations = [(base, _merge_sample(chains))]
        else:
            conversations = [
                (
                    {**base, "purpose": c.purpose, "question_id": c.question_id, "calls": c.calls},
                    c.turns,
                )
                for c in chains
            ]
        missing: list[MissingImage] = []
        rows = []
        for row_base, turns in conversations:
            references = _image_references(
                record, turns, files, image_template, relative_to, missing
            )
            if references is not None:
                rows.append(_row(row_base, turns, references, fmt))
        if missing:
            report.skipped["missing image file"] += 1
            report.missing_images += missing
            continue
        report.samples += 1
        report.conversations += len(rows)
        lines.extend(json.dumps(row, ensure_ascii=False) for row in rows)
    _write(out, "".join(line + "\n" for line in lines))
    return report


def _in_selection(record: Mapping[str, Any], wanted: Selection) -> bool:
    task, uid = task_id(str(record.get("task"))), record_uid(record)
    model = record.get("model")
    if model is None:
        return wanted.keeps_sample(task, uid)
    return wanted.keeps(task, str(model), uid)


def _skip_reason(
    record: Mapping[str, Any],
    wanted: Selection | None,
    humans: _HumanScores,
    max_diff: float | None,
) -> str | None:
    if record.get("status") != "ok":
        return "status not ok"
    if wanted is not None and not _in_selection(record, wanted):
        return "not in the chosen split"
    if max_diff is not None:
        return _far_from_humans(record, humans, max_diff)
    return None


def _write(out: str | Path | IO[str], text: str) -> None:
    if isinstance(out, str | Path):
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {out}: {exc}") from exc
    else:
        out.write(text)
