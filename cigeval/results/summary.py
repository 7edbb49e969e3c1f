"""The closing summary of a run: outcomes, scores, calls, tokens, time and optional cost."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval.errors import ConfigError
from cigeval.score import Score


def load_price_table(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a price table: ``{"<model>": {"prompt": USD, "completion": USD}}`` per 1M tokens."""
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
    return {
        k: {"prompt": float(v["prompt"]), "completion": float(v["completion"])}
        for k, v in table.items()
    }


@dataclass
class RunSummary:
    """Accumulates finished Scores; :meth:`render` prints the closing summary."""

    prices: dict[str, dict[str, float]] | None = None
    statuses: Counter[str] = field(default_factory=Counter)
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
    judgments_per_sample: int = 1

    def add(self, score: Score) -> None:
        """Count one finished sample."""
        self.statuses[score.status] += 1
        if score.ok and score.value is not None:
            self.per_task[score.task].append(score.value)
        elif score.error:
            self.errors.append((score.id, score.error))
        self.calls += score.usage.get("calls", 0)
        self.cached_calls += score.usage.get("cached_calls", 0)
        prompt, completion = (
            score.usage.get("prompt_tokens", 0),
            score.usage.get("completion_tokens", 0),
        )
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        if score.judge:
            self.judges.add(score.judge)
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
            "mean_score_by_task": {t: sum(v) / len(v) for t, v in sorted(self.per_task.items())},
            "model_calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 4) if self.prices else None,
            "judgments_per_sample": self.judgments_per_sample,
            "wall_s": round(wall_s, 2),
        }

    def render(self, wall_s: float, max_errors: int = 10) -> str:
        """Human-readable closing summary."""
        done = self.statuses["ok"] + self.statuses["error"]
        lines = [
            f"samples: {done} evaluated ({self.statuses['ok']} ok, {self.statuses['error']} error)"
            + (f", {self.skipped} already in the results file" if self.skipped else ""),
        ]
        for task, values in sorted(self.per_task.items()):
            lines.append(
                f"  {task:<18} n={len(values):<5} mean score {sum(values) / len(values):.3f}"
            )
        fresh = self.calls - self.cached_calls
        lines.append(
            f"model calls: {self.calls} ({self.cached_calls} from cache, {fresh} sent); "
            f"tokens: {self.prompt_tokens} prompt + {self.completion_tokens} completion"
        )
        if self.judgments_per_sample > 1:
            lines.append(
                f"ensemble: {self.judgments_per_sample} judgments per sample "
                "(the calls, tokens and cost above include every judgment)"
            )
        if self.prices:
            lines.append(f"cost: ${self.cost_usd:.4f}")
        rate = done / wall_s if wall_s > 0 else 0.0
        lines.append(f"time: {wall_s:.1f} s ({rate:.2f} samples/s)")
        for sample_id, message in self.errors[:max_errors]:
            lines.append(f"  error {sample_id}: {message}")
        if len(self.errors) > max_errors:
            lines.append(
                f"  ... and {len(self.errors) - max_errors} more errors (see the results file)"
            )
        if self.previous_errors:
            lines.append(
                f"{self.previous_errors} sample(s) recorded as error by an earlier run "
                "(rerun with --retry-errors to try them again)"
            )
        return "\n".join(lines)
