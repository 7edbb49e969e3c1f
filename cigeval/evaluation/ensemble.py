"""Judge ensembles: several judgments per sample, combined by a named rule, with their spread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cigeval.backends import Backend
from cigeval.config import EnsembleConfig
from cigeval.messages import GenerationSettings
from cigeval.rules import aggregate, combine, spread
from cigeval.score import SubScore, Verdict


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
                    # distinct seeds keep the samples apart (and apart in the cache), from 0
                    # when no seed is given
                    seed = (base.seed or 0) + index
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


def combine_verdicts(
    verdicts: list[Verdict],
    labels: list[str],
    ensemble: EnsembleConfig,
    aggregate_rule: str,
    sub_question_level: bool = True,
) -> Verdict:
    """One Verdict from several judges' Verdicts on the same sample.

    Failed judgments are left out and counted in ``details['missing_judgments']``; the
    sample fails only when every judge failed. With ``sub_question_level`` False (rubrics whose
    score is not the aggregate of 0-10 sub-scores), final scores are combined whatever
    ``ensemble.level`` asks.
    """
    ok = [v for v in verdicts if v.ok]
    details: dict[str, Any] = {
        "judgments": [
            {
                "judge": label,
                "status": "ok" if v.ok else "error",
                "score": v.value,
                "error": v.error,
                "dimensions": v.dimensions or None,
            }
            for v, label in zip(verdicts, labels, strict=True)
        ],
        "missing_judgments": len(verdicts) - len(ok),
        "combine": ensemble.combine,
        "level": ensemble.level if sub_question_level else "final",
    }
    if not ok:
        return Verdict.failure(
            "every judge failed: "
            + "; ".join(f"{label}: {v.error}" for v, label in zip(verdicts, labels, strict=True)),
            details=details,
        )
    grid = ensemble.grid
    values = [v.value for v in ok if v.value is not None]
    if sub_question_level and ensemble.level == "sub_question" and all(v.sub_scores for v in ok):
        sub_scores = _combine_sub_scores(ok, ensemble)
        scored = [s.score for s in sub_scores if s.score is not None]
        value = aggregate(scored, aggregate_rule) / 10.0
    else:
        sub_scores = ok[0].sub_scores
        value = combine(values, ensemble.combine, grid=grid / 10.0)
    dimensions: dict[str, float | None] = {}
    for name in sorted({k for v in ok for k in v.dimensions}):
        found = [d for v in ok if (d := v.dimensions.get(name)) is not None]
        dimensions[name] = combine(found, ensemble.combine, grid=grid / 10.0) if found else None
    return Verdict(
        value=value,
        sub_scores=sub_scores,
        dimensions=dimensions,
        details=details,
        spread=spread(values, tolerance=0.1),
    )


def _combine_sub_scores(verdicts: list[Verdict], ensemble: EnsembleConfig) -> list[SubScore]:
    combined: list[SubScore] = []
    for template in verdicts[0].sub_scores:
        same = [
            sub for v in verdicts for sub in v.sub_scores if sub.question_id == template.question_id
        ]
        values = [sub.score for sub in same if sub.score is not None]
        reasons = [sub.reasoning for sub in same if sub.reasoning]
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
