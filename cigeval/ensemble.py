"""Judge ensembles: several judgments per sample, combined by a named rule, with their spread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cigeval.backends.base import Backend
from cigeval.combine import COMBINE_RULES, combine, spread
from cigeval.errors import ConfigError
from cigeval.messages import GenerationSettings
from cigeval.rubrics.base import aggregate_scores
from cigeval.score import Score, SubScore


class EnsembleConfig(BaseModel):
    """How many judgments to make per sample and how to combine them.

    Each model (``--model`` repeated) is asked ``samples_per_model`` times; with more than one
    sample per model the extra ones run at ``temperature`` with seeds ``seed, seed+1, ...`` so
    they differ (and each is cached separately). ``level`` chooses whether sub-question scores
    are combined before the task's aggregate (``sub_question``) or final scores (``final``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    samples_per_model: int = Field(1, ge=1)
    temperature: float = Field(0.7, ge=0, description="Used when samples_per_model > 1.")
    combine: str = Field("mean", description=f"One of {', '.join(COMBINE_RULES)}.")
    level: Literal["sub_question", "final"] = "sub_question"
    grid: float = Field(1.0, gt=0, description="Grid step (0-10 scale) for the majority rule.")
    prompt_dirs: tuple[str, ...] = Field(
        (), description="Prompt variants: template folders, each judged with every model."
    )

    def model_post_init(self, __context: Any) -> None:
        """Reject unknown combine rules early."""
        if self.combine not in COMBINE_RULES:
            raise ConfigError(
                f"unknown combine rule {self.combine!r}; use {', '.join(COMBINE_RULES)}"
            )


@dataclass(frozen=True)
class Judge:
    """One judgment source: a backend and the generation settings it is asked with."""

    backend: Backend
    settings: GenerationSettings
    label: str
    prompt_dir: str | None = None


def build_judges(
    backends: list[Backend],
    base: GenerationSettings,
    ensemble: EnsembleConfig,
    prompt_dir: str | None = None,
) -> list[Judge]:
    """Every (model, prompt variant, sample) combination of the ensemble as a Judge."""
    judges: list[Judge] = []
    variants: tuple[str | None, ...] = ensemble.prompt_dirs or (prompt_dir,)
    several = ensemble.samples_per_model > 1
    for backend in backends:
        for variant in variants:
            for index in range(ensemble.samples_per_model):
                settings = base
                if several:
                    seed = None if base.seed is None else base.seed + index
                    settings = GenerationSettings(
                        temperature=ensemble.temperature,
                        max_tokens=base.max_tokens,
                        seed=seed,
                        top_p=base.top_p,
                    )
                label = backend.identity
                if ensemble.prompt_dirs:
                    label += f"[{variant}]"
                if several:
                    label += f"#{index + 1}"
                judges.append(Judge(backend, settings, label, variant))
    return judges


def combine_scores(
    scores: list[Score],
    labels: list[str],
    ensemble: EnsembleConfig,
    aggregate: str,
    sub_question_level: bool = True,
) -> Score:
    """One Score from several judges' Scores of the same sample.

    Failed judgments are left out and counted in ``details['missing_judgments']``; the
    sample fails only when every judge failed. Traces are concatenated. With
    ``sub_question_level`` False (rubrics whose score is not the aggregate of 0-10
    sub-scores), final scores are combined whatever ``ensemble.level`` asks.
    """
    first = scores[0]
    ok = [s for s in scores if s.ok and s.value is not None]
    details: dict[str, Any] = {
        "judgments": [
            {
                "judge": label,
                "status": s.status,
                "score": s.value,
                "error": s.error,
                "dimensions": s.dimensions or None,
            }
            for s, label in zip(scores, labels, strict=True)
        ],
        "missing_judgments": len(scores) - len(ok),
        "combine": ensemble.combine,
        "level": ensemble.level if sub_question_level else "final",
    }
    merged = Score(id=first.id, task=first.task, rubric=first.rubric, status="ok", details=details)
    for s in scores:
        merged.trace.events.extend(s.trace.events)
    if not ok:
        merged.status = "error"
        merged.error = "every judge failed: " + "; ".join(
            f"{label}: {s.error}" for s, label in zip(scores, labels, strict=True)
        )
        return merged
    grid10 = ensemble.grid
    if sub_question_level and ensemble.level == "sub_question" and all(s.sub_scores for s in ok):
        merged.sub_scores = _combine_sub_scores(ok, ensemble)
        values = [s.score for s in merged.sub_scores if s.score is not None]
        merged.value = aggregate_scores(values, aggregate) / 10.0
    else:
        merged.sub_scores = ok[0].sub_scores
        merged.value = combine(
            [s.value for s in ok if s.value is not None], ensemble.combine, grid=grid10 / 10.0
        )
    dimension_names = sorted({k for s in ok for k in s.dimensions})
    for name in dimension_names:
        values = [v for s in ok if (v := s.dimensions.get(name)) is not None]
        merged.dimensions[name] = (
            combine(values, ensemble.combine, grid=grid10 / 10.0) if values else None
        )
    finals = [s.value for s in ok if s.value is not None]
    merged.spread = spread(finals, tolerance=0.1)
    return merged


def _combine_sub_scores(scores: list[Score], ensemble: EnsembleConfig) -> list[SubScore]:
    combined: list[SubScore] = []
    for template in scores[0].sub_scores:
        values = [
            sub.score
            for s in scores
            for sub in s.sub_scores
            if sub.question_id == template.question_id and sub.score is not None
        ]
        reasons = [
            sub.reasoning
            for s in scores
            for sub in s.sub_scores
            if sub.question_id == template.question_id and sub.reasoning
        ]
        combined.append(
            template.model_copy(
                update={
                    "score": combine(values, ensemble.combine, grid=ensemble.grid)
                    if values
                    else None,
                    "judgments": values,
                    "reasoning": " | ".join(reasons),
                }
            )
        )
    return combined
