"""Pointwise judging of candidates (rubric ``pointwise``): another rubric (``cigeval`` by
default, the paper's agent) scores every candidate on its own, as if it were the sample's
``images.output``, and the candidates are then ranked by score.

Equal scores tie: the CIGEval score is the minimum of 0-10 sub-scores divided by 10, so two
candidates often share a score, and then neither is preferred. Each candidate is judged
alone, so the order of presentation cannot sway the result; ``consistent`` is always true.
The record's ``score`` is the mean of the candidates' scores; their scores, the ranking and
the preference are in ``details``, and every candidate's sub-scores are listed with their
question ids prefixed by the candidate label (``A/edit_success``).

Options (``rubric_options``): ``rubric`` (the rubric that scores each candidate, default
``cigeval``) and ``options`` (that rubric's own ``rubric_options``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from cigeval.errors import ConfigError
from cigeval.ranking import ranking_from_scores
from cigeval.rubrics._shared import rubric_options
from cigeval.rubrics.base import Rubric
from cigeval.rubrics.candidates import (
    candidate_image,
    candidate_labels,
    combine_preferences,
    preference_details,
    require_candidates,
)
from cigeval.sample import Sample
from cigeval.sample_run import SampleRun
from cigeval.score import Verdict
from cigeval.tools import Tool, resolve_tools

OPTIONS = ("rubric", "options")
#: The rubrics that judge candidates themselves cannot score one candidate.
_PREFERENCE_RUBRICS = ("pointwise", "pairwise")


def _inner_rubric(name: Any) -> Rubric:
    from cigeval.rubrics.registry import RUBRICS

    if not isinstance(name, str):
        raise ConfigError(f"rubric option rubric={name!r}; expected a rubric name")
    canonical = RUBRICS.canonical(name)
    if canonical in _PREFERENCE_RUBRICS:
        raise ConfigError(f"rubric pointwise cannot score candidates with rubric {canonical}")
    return RUBRICS.get(canonical)


def candidate_sample(sample: Sample, label: str) -> Sample:
    """``sample`` with candidate ``label`` as its one ``images.output`` and no candidates."""
    assert sample.candidates is not None
    images = sample.images.model_copy(update={"output": sample.candidates[label]})
    return sample.model_copy(update={"images": images, "candidates": None, "human": None})


class PointwiseRubric:
    """Scores every candidate with another rubric, then ranks them; see the module
    docstring."""

    name = "pointwise"
    description = (
        "Every candidate scored on its own by another rubric (cigeval by default), then "
        "ranked by score; equal scores tie."
    )

    def validate(self, sample: Sample) -> None:
        """Require candidates and the task's text fields and input images (the scoring
        rubric checks each candidate's sample again before judging it)."""
        require_candidates(sample, self.name)

    def offered_tools(self, run: SampleRun) -> list[Tool]:
        """The tools the default scoring rubric (the agent) is offered; their presence lets
        the evaluator's preflight check them before the first sample, as for ``cigeval``."""
        return resolve_tools(run.config.tools, run.config.method)

    async def _score(
        self, run: SampleRun, inner: Rubric, label: str, options: dict[str, Any]
    ) -> Verdict:
        sample = candidate_sample(run.sample, label)
        inner.validate(sample)
        loaded = {r: i for r, i in run.loaded.items() if not r.startswith("candidate:")}
        loaded["output"] = candidate_image(run, label)
        config = run.config.model_copy(update={"rubric_options": options})
        one = dataclasses.replace(run, sample=sample, loaded=loaded, config=config)
        return await inner.evaluate(one)

    async def evaluate(self, run: SampleRun) -> Verdict:
        """Score each candidate (concurrently), then rank them by score."""
        options = rubric_options(run, self.name, OPTIONS)
        inner = _inner_rubric(options.get("rubric", "cigeval"))
        inner_options = options.get("options") or {}
        if not isinstance(inner_options, dict):
            raise ConfigError("rubric option options must be a dict of the inner rubric's options")
        labels = candidate_labels(run.sample)
        verdicts = await asyncio.gather(
            *(self._score(run, inner, label, inner_options) for label in labels)
        )
        sub_scores = [
            sub.model_copy(
                update={
                    "question_id": f"{label}/{sub.question_id}",
                    "question": f"[{label}] {sub.question}",
                }
            )
            for label, verdict in zip(labels, verdicts, strict=True)
            for sub in verdict.sub_scores
        ]
        per_candidate = {
            label: {"score": v.value, "error": v.error}
            for label, v in zip(labels, verdicts, strict=True)
        }
        failed = [label for label, v in zip(labels, verdicts, strict=True) if not v.ok]
        if failed:
            return Verdict.failure(
                "; ".join(f"candidate {c}: {per_candidate[c]['error']}" for c in failed),
                sub_scores=sub_scores,
                details={"candidates": labels, "candidate_verdicts": per_candidate},
            )
        scores = {
            label: float(v.value)
            for label, v in zip(labels, verdicts, strict=True)
            if v.value is not None
        }
        details = preference_details(labels, ranking_from_scores(scores), True, scores)
        details["scored_by"] = inner.name
        details["value_mapping"] = "mean of the candidates' scores"
        return Verdict(
            value=sum(scores.values()) / len(scores), sub_scores=sub_scores, details=details
        )

    def combine_verdicts(
        self, verdicts: list[Verdict], labels: list[str], base: Verdict
    ) -> Verdict:
        """Several judges as one: see :func:`cigeval.rubrics.candidates.combine_preferences`."""
        return combine_preferences(verdicts, labels, base)
