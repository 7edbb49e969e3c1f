"""Fine-tuning data from evaluation traces (CIGEval paper §3.4).

Reads cigeval results records (each with a ``trace`` of events) and writes chat-format JSONL:
one conversation per model call, or one per sample. Each line holds ``messages`` (role and
content, an ``<image>`` placeholder per image in front of the message text, the judge's reply
as the assistant turn) and ``images`` (one reference per placeholder, in order), the layout
LLaMA-Factory and ms-swift read. Images are referenced by their content hash; map the hashes to
files with ``image_template``.

Like the paper, the data can be filtered to trajectories whose score is close to the human
score (|pred - human| <= 0.3 on the [0, 1] scale) and to one side of a train/test split.

A sub-question judged over several thought/action/observation rounds is one growing
conversation (each round's request holds the earlier ones), so it exports as one multi-turn
conversation: per call, its last call is the whole trajectory; per sample, the calls that
continue one another are joined. Unless ``keep_retried``, a reply that was re-asked is left
out and the reply that worked is exported as the answer to the request as first asked.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from cigeval.errors import InputError
from cigeval.meta.scores import record_uid, task_id
from cigeval.trace import MessageRecord, ModelCallEvent, Trace

if TYPE_CHECKING:
    import pandas as pd

Granularity = Literal["call", "sample"]
IMAGE_PLACEHOLDER = "<image>"


@dataclass
class ExportReport:
    """What an export wrote and what it skipped (reason -> number of samples)."""

    records: int = 0
    samples: int = 0
    conversations: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary."""
        return {
            "records": self.records,
            "samples": self.samples,
            "conversations": self.conversations,
            "skipped": dict(self.skipped),
        }


def record_score(record: Mapping[str, Any], dimension: str = "SC") -> float | None:
    """The record's score for a dimension (SC: ``dimensions.SC``, else ``score``)."""
    dims = record.get("dimensions") or {}
    value = dims.get(dimension)
    if value is None and dimension == "SC":
        value = record.get("score")
    return None if value is None else float(value)


def _model_calls(trace: Trace, keep_retried: bool) -> list[ModelCallEvent]:
    calls = trace.model_calls()
    if keep_retried:
        return calls
    # A call that was re-asked (a later attempt for the same purpose, sub-question and round)
    # had an unusable reply; only the attempt that worked is a trajectory worth learning from,
    # as the answer to the request as first asked.
    last: dict[tuple[str, str | None, int], int] = {}
    for call in calls:
        key = (call.purpose, call.question_id, call.round)
        last[key] = max(last.get(key, 0), call.attempt)
    return [
        _as_first_asked(c) for c in calls if c.attempt == last[(c.purpose, c.question_id, c.round)]
    ]


def _as_first_asked(call: ModelCallEvent) -> ModelCallEvent:
    """``call`` without the (unusable reply, re-ask) pairs a re-ask appended to its request."""
    extra = 2 * (call.attempt - 1)
    messages = call.messages
    if not extra or len(messages) <= extra:
        return call
    replies, reasks = messages[-extra::2], messages[-extra + 1 :: 2]
    if any(m.role != "assistant" for m in replies) or any(m.role != "user" for m in reasks):
        return call
    return call.model_copy(update={"messages": messages[:-extra]})


_Turn = tuple[dict[str, str], list[str], list[str]]


def _convert(messages: list[MessageRecord], image_template: str) -> list[_Turn]:
    """Each message as (chat message with placeholders, image references, image labels)."""
    turns = []
    for message in messages:
        placeholders = "".join(f"{IMAGE_PLACEHOLDER}\n" for _ in message.images)
        refs = [
            image_template.format(sha256=p.get("sha256", ""), label=p.get("label", ""))
            for p in message.images
        ]
        labels = [str(p.get("label", "")) for p in message.images]
        turns.append(({"role": message.role, "content": placeholders + message.text}, refs, labels))
    return turns


def _conversation(base: dict[str, Any], turns: list[_Turn]) -> dict[str, Any]:
    return {
        **base,
        "messages": [t[0] for t in turns],
        "images": [ref for t in turns for ref in t[1]],
        "image_labels": [label for t in turns for label in t[2]],
    }


def _conversations(
    record: Mapping[str, Any], calls: list[ModelCallEvent], per: Granularity, image_template: str
) -> list[dict[str, Any]]:
    base = {"id": record.get("id"), "task": record.get("task"), "model": record.get("model")}
    per_call = []
    for call in calls:
        turns = _convert(call.messages, image_template)
        turns.append(({"role": "assistant", "content": call.reply}, [], []))
        per_call.append((call, turns))
    if per == "call":
        return [
            _conversation({**base, "purpose": call.purpose, "question_id": call.question_id}, turns)
            for call, turns in per_call
        ]
    # One conversation per sample: a call whose messages continue an earlier one (a later round
    # of the same sub-question) extends it, even when other sub-questions' calls came in
    # between; the conversations are then joined in order, a system prompt only once.
    threads: list[list[_Turn]] = []
    for _, turns in per_call:
        asked = [t[0] for t in turns[:-1]]
        continued = [t for t in threads if asked[: len(t)] == [turn[0] for turn in t]]
        if continued:
            thread = max(continued, key=len)
            thread += turns[len(thread) :]
        else:
            threads.append(list(turns))
    merged: list[_Turn] = []
    for thread in threads:
        has_system = any(t[0]["role"] == "system" for t in merged)
        merged += [t for t in thread if not (has_system and t[0]["role"] == "system")]
    return [_conversation(base, merged)] if merged else []


def export_trajectories(
    records: Iterable[Mapping[str, Any]],
    out: str | Path | IO[str],
    per: Granularity = "call",
    max_diff: float | None = None,
    human: pd.DataFrame | None = None,
    dimension: str = "SC",
    samples: Mapping[str, Iterable[str]] | None = None,
    image_template: str = "sha256:{sha256}",
    keep_retried: bool = False,
) -> ExportReport:
    """Write chat-format fine-tuning JSONL from results records; return what was kept.

    Only records with status ``ok`` are exported. ``max_diff`` keeps a sample only if its
    score is within that distance of the human score (``human``: a frame indexed by task,
    model, uid as from :func:`cigeval.meta.load_human_ratings`, loaded when not given).
    ``samples`` (task -> uids, e.g. ``split.subset('train')``) keeps only those samples.
    Calls that were re-asked after an unusable reply are left out unless ``keep_retried``.
    """
    if per not in ("call", "sample"):
        raise InputError(f"unknown granularity {per!r}; use 'call' or 'sample'")
    if max_diff is not None and human is None:
        from cigeval.meta.human import load_human_ratings

        human = load_human_ratings(all_models=True)
    wanted = None
    if samples is not None:
        wanted = {(t, str(u)) for t, uids in samples.items() for u in uids}
    report = ExportReport()
    lines: list[str] = []
    for record in records:
        report.records += 1
        task, uid = task_id(str(record.get("task"))), record_uid(record)
        if record.get("status") != "ok":
            report.skipped["status not ok"] += 1
            continue
        if wanted is not None and (task, uid) not in wanted:
            report.skipped["not in the chosen split"] += 1
            continue
        if max_diff is not None:
            assert human is not None
            score = record_score(record, dimension)
            key = (task, str(record.get("model")), uid)
            if score is None or math.isnan(score):
                report.skipped[f"no {dimension} score"] += 1
                continue
            if key not in human.index:
                report.skipped["no human rating"] += 1
                continue
            reference = float(human.at[key, dimension])  # type: ignore[arg-type]
            if abs(score - reference) > max_diff:
                report.skipped["too far from the human score"] += 1
                continue
        try:
            trace = Trace.model_validate({"events": record.get("trace") or []})
        except ValidationError:
            report.skipped["unreadable trace"] += 1
            continue
        calls = _model_calls(trace, keep_retried)
        conversations = _conversations(record, calls, per, image_template)
        if not conversations:
            report.skipped["no model calls in the trace"] += 1
            continue
        report.samples += 1
        report.conversations += len(conversations)
        lines.extend(json.dumps(c, ensure_ascii=False) for c in conversations)
    text = "".join(line + "\n" for line in lines)
    if isinstance(out, str | Path):
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {out}: {exc}") from exc
    else:
        out.write(text)
    return report
