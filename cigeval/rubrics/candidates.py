"""What the preference rubrics (``pairwise``, ``pointwise``) share: a sample's candidates,
the reference images shown beside them, the preference a ranking gives, and how several
judges' preferences combine.

A preference Verdict's ``details`` hold ``candidates`` (labels), ``ranking`` (groups of
labels, best first), ``preference`` (the one best label, or ``"tie"``), ``consistent``,
``scores`` (label -> score on [0, 1]) and, for the direct judge, ``orders`` (one entry per
presentation order: the order, its ranking, its scores and reasoning).
"""

from __future__ import annotations

from typing import Any

from cigeval.errors import InputError
from cigeval.ranking import Ranking, all_tied, as_lists, canonical, preference_of, ranking_text
from cigeval.rules import combine
from cigeval.sample import Sample, candidate_role
from cigeval.sample_run import SampleRun
from cigeval.score import Verdict
from cigeval.tasks import get_task


def candidate_labels(sample: Sample) -> list[str]:
    """The sample's candidate labels, in the order given."""
    return list(sample.candidates or {})


def require_candidates(sample: Sample, rubric: str) -> None:
    """InputError unless the sample holds candidates and every text field and reference
    image its task needs (the output aside: the candidates are the outputs)."""
    problems = []
    if not sample.candidates:
        problems.append(
            "needs candidates ({'A': path, 'B': path, ...}); a sample with one images.output "
            "is judged by the other rubrics"
        )
    spec = get_task(sample.task)
    for name in spec.text_fields:
        if not getattr(sample, name, None):
            problems.append(f"missing text field {name!r}")
    provided = sample.images.provided()
    for role in spec.image_roles:
        if role == "output":
            continue
        if role == "subjects" and ("subjects" in provided or "subject" in provided):
            continue
        if role not in provided:
            problems.append(f"missing image {role!r} (images.{role})")
    if problems:
        raise InputError(f"rubric {rubric}: " + "; ".join(problems), sample.id)


def reference_roles(run: SampleRun) -> list[str]:
    """The loaded input images other than the candidates, in the task's order (a
    side-by-side reference shown once, whole)."""
    spec = run.task
    roles: list[str] = []
    for role in (*spec.image_roles, *spec.optional_image_roles):
        if role == "output":
            continue
        if role == "subjects" and not run.side_by_side:
            roles += [r for r in ("subject_1", "subject_2") if r in run.images]
        elif role in run.images:
            roles.append(role)
    return roles


def candidate_image(run: SampleRun, label: str) -> Any:
    """The loaded image of candidate ``label``."""
    return run.loaded[candidate_role(label)]


def preference_details(
    labels: list[str], ranking: Ranking, consistent: bool, scores: dict[str, float] | None
) -> dict[str, Any]:
    """The preference part of a Verdict's details (see the module docstring)."""
    return {
        "candidates": labels,
        "ranking": as_lists(ranking),
        "ranking_text": ranking_text(ranking),
        "preference": preference_of(ranking),
        "consistent": consistent,
        "scores": scores,
    }


def combine_preferences(verdicts: list[Verdict], labels: list[str], base: Verdict) -> Verdict:
    """Several judges' preference Verdicts as one, on top of ``base`` (the generic ensemble
    combination: its value, spread and ``judgments``).

    Each judgment keeps its judge's ranking and consistency; the combined ranking is kept
    only when every judge that answered kept the same one, else every candidate ties (and
    ``judges_agree`` is false). Scores are combined per candidate by the mean.
    """
    answered = [(v, label) for v, label in zip(verdicts, labels, strict=True) if v.ok]
    if not answered or base.error is not None:
        return base
    details = dict(base.details)
    judgments = [dict(j) for j in details.get("judgments", [])]
    for judgment, verdict in zip(judgments, verdicts, strict=True):
        if verdict.ok:
            judgment["ranking"] = verdict.details.get("ranking")
            judgment["consistent"] = verdict.details.get("consistent")
    candidates = answered[0][0].details["candidates"]
    rankings = {canonical(tuple(tuple(g) for g in v.details["ranking"])) for v, _ in answered}
    agree = len(rankings) == 1
    ranking = next(iter(rankings)) if agree else all_tied(candidates)
    consistent = agree and all(v.details.get("consistent") for v, _ in answered)
    per_judge = [v.details.get("scores") for v, _ in answered]
    scores = None
    if all(isinstance(s, dict) for s in per_judge):
        scores = {c: combine([s[c] for s in per_judge if s], "mean") for c in candidates}
    details.update(preference_details(candidates, ranking, consistent, scores))
    details["judgments"] = judgments
    details["judges_agree"] = agree
    return base.model_copy(update={"details": details})
