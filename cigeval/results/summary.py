"""The closing summary of a run: outcomes, scores, calls, tokens, time and optional cost."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError
from cigeval.score import Score
from cigeval.terminal import safe_text

if TYPE_CHECKING:
    from cigeval.backends.batch import BatchStats

#: The share of the list price a Batch API call is spared (OpenAI: half).
DEFAULT_BATCH_DISCOUNT = 0.5


def load_price_table(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a price table: ``{"<model>": {"prompt": USD, "completion": USD}}`` per 1M tokens.

    An entry may add ``"batch_discount"``: the share of the price a Batch API call is spared
    (default 0.5, OpenAI's), used for the saving reported under ``--batch``.
    """
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read price table {path}: {exc}") from None
    if not isinstance(table, dict) or not all(
        isinstance(v, dict) and {"prompt", "completion"} <= set(v) for v in table.values()
    ):
        raise ConfigError(
            'price table must map model names to {"prompt": USD per 1M, "completion": USD per 1M}'
        )
    table = {
        k: {
            "prompt": float(v["prompt"]),
            "completion": float(v["completion"]),
            "batch_discount": float(v.get("batch_discount", DEFAULT_BATCH_DISCOUNT)),
        }
        for k, v in table.items()
    }
    for model, price in table.items():
        if not 0.0 <= price["batch_discount"] <= 1.0:
            raise ConfigError(f"price table: batch_discount of {model!r} must be within 0 and 1")
    return table


@dataclass
class RunSummary:
    """Accumulates finished Scores; :meth:`render` prints the closing summary."""

    prices: dict[str, dict[str, float]] | None = None
    statuses: Counter[str] = field(default_factory=Counter)
    #: The ok scores per task (per value of :attr:`group_by` when it is set).
    per_task: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[tuple[str, str]] = field(default_factory=list)
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    skipped: int = 0
    previous_errors: int = 0
    cost_usd: float = 0.0
    judges: set[str] = field(default_factory=set)
    #: The prompt sets that produced the samples judged (``provenance.prompt_set``), counted.
    prompt_sets: Counter[str] = field(default_factory=Counter)
    judgments_per_sample: int = 1
    #: Samples with a sub-question judged without the tool the plan chose, and those
    #: sub-questions (``SubScore.degraded``), whatever the sample's status.
    degraded_samples: int = 0
    degraded_questions: int = 0
    #: True when degraded samples were made errors (``--on-degraded error``).
    degraded_are_errors: bool = False
    #: HTTP requests sent (retries and failed attempts included), from ``usage``'s
    #: ``http_attempts``; None until a record reports them (backends that do not count).
    http_attempts: int | None = None
    #: Replies cut off (token limit, content filter), from ``usage``'s ``cut_off_replies``.
    cut_off_replies: int = 0
    #: Replies longer than ``--max-reply-chars``, from ``usage``'s ``overlong_replies``.
    overlong_replies: int = 0
    #: What the Batch API path did (``--batch``), or None.
    batch: BatchStats | None = None
    #: The field the mean scores are grouped by (:func:`~cigeval.results.record.group_of`);
    #: None: by task.
    group_by: str | None = None

    def add(self, score: Score) -> None:
        """Count one finished sample."""
        self.statuses[score.status] += 1
        if score.ok and score.value is not None:
            self.per_task[self._group(score)].append(score.value)
        elif score.error:
            self.errors.append((score.id, score.error))
        self.calls += score.usage.get("calls", 0)
        self.cached_calls += score.usage.get("cached_calls", 0)
        if "http_attempts" in score.usage:
            self.http_attempts = (self.http_attempts or 0) + score.usage["http_attempts"]
        self.cut_off_replies += score.usage.get("cut_off_replies", 0)
        self.overlong_replies += score.usage.get("overlong_replies", 0)
        degraded = len(score.degraded_questions)
        if degraded:
            self.degraded_samples += 1
            self.degraded_questions += degraded
        prompt, completion = (
            score.usage.get("prompt_tokens", 0),
            score.usage.get("completion_tokens", 0),
        )
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        if score.judge:
            self.judges.add(score.judge)
        prompt_set = score.provenance.get("prompt_set")
        if prompt_set:
            self.prompt_sets[str(prompt_set)] += 1
        judgments = len(score.details.get("judgments") or ())
        self.judgments_per_sample = max(self.judgments_per_sample, judgments)
        if self.prices:
            for event in score.trace.model_calls():
                if event.cached:
                    continue
                price = self.prices.get(event.model) or self.prices.get(score.judge or "")
                if price:
                    self.cost_usd += (
                        event.prompt_tokens * price["prompt"]
                        + event.completion_tokens * price["completion"]
                    ) / 1e6

    def _group(self, score: Score) -> str:
        if self.group_by is None:
            return score.task
        from cigeval.results.record import group_of

        fields = {"task": score.task, "rubric": score.rubric, "status": score.status}
        return group_of({**fields, **score.passthrough}, self.group_by)

    @property
    def batch_saving_usd(self) -> float:
        """What the batch discount spared on the replies read from batches (0 without a
        price table or without ``--batch``)."""
        if not self.prices or self.batch is None:
            return 0.0
        saved = 0.0
        for model, (prompt, completion) in self.batch.tokens.items():
            price = self.prices.get(model) or next(
                (self.prices[j] for j in sorted(self.judges) if j in self.prices), None
            )
            if price:
                listed = (prompt * price["prompt"] + completion * price["completion"]) / 1e6
                saved += listed * price.get("batch_discount", DEFAULT_BATCH_DISCOUNT)
        return saved

    @property
    def all_ok(self) -> bool:
        """True when no sample (in this run or recorded before it) ended in error."""
        return self.statuses["error"] == 0 and self.previous_errors == 0

    def as_dict(self, wall_s: float) -> dict[str, Any]:
        """Machine-readable summary."""
        return {
            "ok": self.statuses["ok"],
            "error": self.statuses["error"],
            "skipped_already_done": self.skipped,
            f"mean_score_by_{self.group_by or 'task'}": {
                t: sum(v) / len(v) for t, v in sorted(self.per_task.items())
            },
            "degraded_samples": self.degraded_samples,
            "degraded_questions": self.degraded_questions,
            "model_calls": self.calls,
            "cached_calls": self.cached_calls,
            "http_attempts": self.http_attempts,
            "cut_off_replies": self.cut_off_replies,
            "overlong_replies": self.overlong_replies,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd - self.batch_saving_usd, 4) if self.prices else None,
            "batch": self.batch.as_dict() if self.batch is not None else None,
            "batch_saving_usd": round(self.batch_saving_usd, 4) if self.batch else None,
            "judgments_per_sample": self.judgments_per_sample,
            "prompt_sets": dict(self.prompt_sets),
            "wall_s": round(wall_s, 2),
        }

    def render(self, wall_s: float, max_errors: int = 10) -> str:
        """Human-readable closing summary."""
        done = self.statuses["ok"] + self.statuses["error"]
        lines = [
            f"samples: {done} evaluated ({self.statuses['ok']} ok, {self.statuses['error']} error)"
            + (f", {self.skipped} already in the results file" if self.skipped else ""),
        ]
        if self.group_by is not None and self.per_task:
            lines.append(f"  mean scores by {safe_text(self.group_by)}:")
        for task, values in sorted(self.per_task.items()):
            mean = sum(values) / len(values)
            lines.append(f"  {safe_text(task):<18} n={len(values):<5} mean score {mean:.3f}")
        if self.prompt_sets:
            lines.append(
                "prompts: "
                + "; ".join(_prompt_set_line(n, c) for n, c in self.prompt_sets.most_common())
            )
        if self.degraded_samples:
            as_errors = in_callers_words("--on-degraded error", "on_degraded='error'")
            treated = (
                f"made errors by {as_errors}"
                if self.degraded_are_errors
                else f"kept as ok; {as_errors} makes them errors"
            )
            lines.append(
                f"degraded: {self.degraded_samples} sample(s), {self.degraded_questions} "
                f"sub-question(s) judged without the tool the plan chose (the notes say why; "
                f"{treated})"
            )
        fresh = self.calls - self.cached_calls
        attempts = (
            f", {self.http_attempts} HTTP attempts with retries and failures"
            if self.http_attempts is not None
            else ""
        )
        lines.append(
            f"model calls: {self.calls} ({self.cached_calls} from cache, {fresh} sent"
            f"{attempts}); tokens: {self.prompt_tokens} prompt + {self.completion_tokens} "
            "completion"
        )
        if self.cut_off_replies:
            lines.append(
                f"cut-off replies: {self.cut_off_replies} (stopped at the token limit or by "
                "a content filter)"
            )
        if self.overlong_replies:
            lines.append(
                f"over-long replies: {self.overlong_replies} (longer than "
                f"{in_callers_words('--max-reply-chars', 'max_reply_chars')}; "
                "cut there and asked again)"
            )
        if self.judgments_per_sample > 1:
            lines.append(
                f"ensemble: {self.judgments_per_sample} judgments per sample "
                "(the calls, tokens and cost above include every judgment)"
            )
        if self.batch is not None:
            stats = self.batch
            stages = "; ".join(
                f"stage {stage}: {'+'.join(map(str, sizes))}"
                for stage, sizes in stats.stages().items()
            )
            resumed = sum(1 for b in stats.batches if b.resumed)
            lines.append(
                f"batch API: {stats.calls_sent} calls sent in "
                f"{len(stats.batches) - resumed} new batch(es)"
                + (f", {resumed} resumed" if resumed else "")
                + (f" ({stages})" if stages else "")
                + (f"; {stats.resubmitted} resubmitted" if stats.resubmitted else "")
                + (f"; {stats.errors} failed for good" if stats.errors else "")
            )
        if self.prices:
            saving = self.batch_saving_usd
            if self.batch is not None:
                lines.append(
                    f"cost: ${self.cost_usd - saving:.4f} (batch discount saved ${saving:.4f} "
                    f"of ${self.cost_usd:.4f} at list prices)"
                )
            else:
                lines.append(f"cost: ${self.cost_usd:.4f}")
        rate = done / wall_s if wall_s > 0 else 0.0
        lines.append(f"time: {wall_s:.1f} s ({rate:.2f} samples/s)")
        for sample_id, message in self.errors[:max_errors]:
            lines.append(f"  error {safe_text(sample_id)}: {safe_text(message)}")
        if len(self.errors) > max_errors:
            lines.append(
                f"  ... and {len(self.errors) - max_errors} more errors (see the results file)"
            )
        if self.previous_errors:
            lines.append(
                f"{self.previous_errors} sample(s) recorded as error by an earlier run "
                f"({in_callers_words('rerun with --retry-errors', 'run with retry_errors=True')}"
                " to try them again)"
            )
        return "\n".join(lines)


#: What each prompt set is, in a few words, for the summary.
_PROMPT_SET_WORDS = {
    "official": "the official CIGEval prompts",
    "paraphrase": "cigeval's paraphrases of the official prompts",
    "cigeval": "cigeval's own prompts",
    "custom": "a prompt folder of your own",
}


def _prompt_set_line(prompt_set: str, samples: int) -> str:
    """``official:1a2b... (the official CIGEval prompts, 12 samples)``."""
    words = [_PROMPT_SET_WORDS.get(part.split(":", 1)[0].strip()) for part in prompt_set.split(",")]
    said = " + ".join(w for w in words if w) or "unknown"
    return f"{safe_text(prompt_set)} ({said}, {samples} sample{'s' if samples != 1 else ''})"
