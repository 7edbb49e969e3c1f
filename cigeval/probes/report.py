"""The probe report: a stable JSON document (see docs/probes.md), read and written here.

Top level: ``pass_rate`` (passed / probes run; a probe that ended in error counts as not
passed), the counts, ``by_task`` and ``by_kind`` tallies, the judge and its settings, the
``probes`` (each with both samples' scores, the expected relation, the checks, ``passed`` and
the judge's reasoning), the ``skipped`` probes (inputs the rubric does not take, checks it
cannot be measured on), and ``drift`` when the run was compared with an older report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

from cigeval.errors import ConfigError
from cigeval.probes.kinds import PROBE_KINDS, Relation
from cigeval.score import Score

#: ``format`` of every probe report; ``version`` changes only when a field changes meaning.
REPORT_FORMAT = "cigeval-probe-report"
REPORT_VERSION = 1


class SampleOutcome(BaseModel):
    """What the judge said about one sample of a probe: its score (0-1), each sub-score
    mapped to 0-1, each sub-score's reasoning, or the error that stopped it."""

    model_config = ConfigDict(extra="allow")

    sample_id: str
    status: Literal["ok", "error"]
    score: float | None = None
    sub_scores: dict[str, float | None] = Field(default_factory=dict)
    reasoning: dict[str, str] = Field(default_factory=dict)
    error: str | None = None
    fresh: bool = Field(False, description="asked without the response cache")

    @classmethod
    def from_score(cls, score: Score, fresh: bool = False) -> SampleOutcome:
        """The outcome of a Score; sub-scores are mapped from their scale to 0-1."""
        sub_scores: dict[str, float | None] = {}
        reasoning: dict[str, str] = {}
        for sub in score.sub_scores:
            low, high = sub.scale
            sub_scores[sub.question_id] = (
                None if sub.score is None or high == low else (sub.score - low) / (high - low)
            )
            if sub.reasoning:
                reasoning[sub.question_id] = sub.reasoning
        return cls(
            sample_id=score.id,
            status=score.status,
            score=score.value,
            sub_scores=sub_scores,
            reasoning=reasoning,
            error=score.error,
            fresh=fresh,
        )


class CheckResult(BaseModel):
    """One check of a probe, measured. Pairs fill ``reference``, ``probe`` and ``delta``
    (probe minus reference); ``not_tie`` fills ``scores`` and ``spread`` (highest minus
    lowest). ``threshold`` is the drop margin, the hold tolerance or the minimum spread."""

    model_config = ConfigDict(extra="allow")

    target: str
    expected: Relation
    measured_by: Literal["score", "sub_score"]
    reference: float | None = None
    probe: float | None = None
    delta: float | None = None
    scores: list[float] | None = None
    spread: float | None = None
    threshold: float
    passed: bool


class ProbeResult(BaseModel):
    """One probe's result. ``status`` is passed, failed or error (a sample of it could not
    be judged; ``error`` says which and why)."""

    model_config = ConfigDict(extra="allow")

    id: str
    task: str
    kind: str
    group: str
    description: str
    expected: str
    status: Literal["passed", "failed", "error"]
    passed: bool
    checks: list[CheckResult] = Field(default_factory=list)
    reference: SampleOutcome | None = None
    probe: SampleOutcome | None = None
    samples: list[SampleOutcome] = Field(default_factory=list)
    error: str | None = None
    fingerprint: str


class SkippedProbe(BaseModel):
    """A probe that was not run for this judge, and why."""

    id: str
    task: str
    kind: str
    reason: str


class Tally(BaseModel):
    """Probes passed, failed and ended in error; the pass rate over all three (None if 0)."""

    passed: int = 0
    failed: int = 0
    errors: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        """Probes run."""
        return self.passed + self.failed + self.errors

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float | None:
        """passed / total, or None when no probe ran."""
        return self.passed / self.total if self.total else None

    def add(self, status: str) -> None:
        """Count one probe result."""
        if status == "passed":
            self.passed += 1
        elif status == "failed":
            self.failed += 1
        else:
            self.errors += 1


class ProbeReport(BaseModel):
    """The whole probe report, as written to ``--out`` (JSON)."""

    model_config = ConfigDict(extra="allow")

    format: str = REPORT_FORMAT
    version: int = REPORT_VERSION
    created_at: str
    cigeval_version: str
    judge: str
    rubric: str
    pass_rate: float | None
    passed: int
    failed: int
    errors: int
    total: int
    by_task: dict[str, Tally]
    by_kind: dict[str, Tally]
    settings: dict[str, float]
    config: dict[str, Any] = Field(default_factory=dict)
    probe_set: str | None = None
    records: str | None = None
    skipped: list[SkippedProbe] = Field(default_factory=list)
    drift: dict[str, Any] | None = None
    probes: list[ProbeResult]

    @classmethod
    def build(
        cls, results: list[ProbeResult], skipped: list[SkippedProbe], **fields: Any
    ) -> ProbeReport:
        """A report from probe results: counts, tallies by task and by kind, pass rate."""
        overall = Tally()
        by_task: dict[str, Tally] = {}
        by_kind: dict[str, Tally] = {}
        for result in results:
            overall.add(result.status)
            by_task.setdefault(result.task, Tally()).add(result.status)
            by_kind.setdefault(result.kind, Tally()).add(result.status)
        return cls(
            pass_rate=overall.pass_rate,
            passed=overall.passed,
            failed=overall.failed,
            errors=overall.errors,
            total=overall.total,
            by_task=by_task,
            by_kind={k: by_kind[k] for k in sorted(by_kind, key=_kind_position)},
            skipped=skipped,
            probes=results,
            **fields,
        )

    def probe(self, probe_id: str) -> ProbeResult | None:
        """The result of a probe by id (``<task>/<kind>``), or None."""
        return next((p for p in self.probes if p.id == probe_id), None)

    def to_json(self) -> str:
        """The report as indented JSON text."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"

    def save(self, path: str | Path) -> None:
        """Write the report to ``path`` (JSON)."""
        Path(path).write_text(self.to_json(), encoding="utf-8")


def _kind_position(kind: str) -> int:
    order = list(PROBE_KINDS)
    return order.index(kind) if kind in order else len(order)


def load_report(path: str | Path) -> ProbeReport:
    """Read a probe report; a missing, unreadable or foreign file is a ConfigError."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"probe report not found: {path}") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read probe report {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise ConfigError(f"{path} is not a cigeval probe report (no format {REPORT_FORMAT!r})")
    if data.get("version") != REPORT_VERSION:
        raise ConfigError(
            f"{path} is a probe report of version {data.get('version')!r}; this cigeval reads "
            f"version {REPORT_VERSION}"
        )
    try:
        return ProbeReport.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path} is not a valid probe report: {exc}") from None
