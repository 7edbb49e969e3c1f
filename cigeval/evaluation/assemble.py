"""The one place a Score is assembled: a rubric's Verdict plus the sample's identity, the
trace, the usage, the settings and the provenance that produced it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from cigeval._version import __version__
from cigeval.backends.base import Backend, backend_endpoint
from cigeval.images import ImagePixels, LoadedImage
from cigeval.results.fingerprint import compute_fingerprint, fingerprint_settings
from cigeval.rubrics.base import DEFAULT_SCORE_RANGE, out_of_range
from cigeval.sample import file_hashes
from cigeval.score import Score, Verdict
from cigeval.session import JudgeSession
from cigeval.trace import Trace


def usage_of(sessions: Iterable[JudgeSession], trace: Trace, wall_ms: int) -> dict[str, int]:
    """Calls, HTTP attempts, cached calls, cut-off and over-long replies, tokens and wall time
    of one sample's judge sessions.

    ``calls`` counts the replies received; ``http_attempts`` the HTTP requests sent for them,
    retries and failed ones included (0 for in-process models, and for answers from the
    cache); ``cut_off_replies`` the replies that arrived unfinished (finish reason ``length``
    or ``content_filter``), ``overlong_replies`` those longer than ``max_reply_chars``; none
    of them is ever used.
    """
    sessions = list(sessions)
    return {
        "calls": sum(s.calls for s in sessions),
        "http_attempts": sum(s.http_attempts for s in sessions),
        "cut_off_replies": sum(s.cut_off_replies for s in sessions),
        "overlong_replies": sum(s.overlong_replies for s in sessions),
        "cached_calls": sum(1 for e in trace.model_calls() if e.cached),
        "prompt_tokens": sum(s.usage.prompt_tokens for s in sessions),
        "completion_tokens": sum(s.usage.completion_tokens for s in sessions),
        "wall_ms": wall_ms,
    }


def judge_provenance(
    label: str,
    backend: Backend,
    prompts_sha256: str | None,
    trace: Trace | None = None,
    *,
    prompt_set: str | None = None,
) -> dict[str, Any]:
    """Where one judge's answers came from: its label, its endpoint (no credentials; None for
    in-process models), the model names the server reported in ``trace``, the sha256 of the
    prompt templates, the prompt set (:mod:`cigeval.prompts.prompt_set`), and how many calls
    ended for each finish reason (``length`` = cut at max_tokens; ``unknown`` when the backend
    does not say)."""
    calls = trace.model_calls() if trace is not None else []
    provenance: dict[str, Any] = {
        "judge": label,
        "endpoint": backend_endpoint(backend),
        "served_models": sorted({c.model for c in calls}),
        "prompts_sha256": prompts_sha256,
    }
    if prompt_set is not None:
        provenance["prompt_set"] = prompt_set
    provenance["finish_reasons"] = dict(Counter(c.finish_reason or "unknown" for c in calls))
    return provenance


def provenance_of(
    judges: Iterable[dict[str, Any]],
    *,
    method: str | None = None,
    scene_graph_model: str | None = None,
    sampling: dict[str, Any] | None = None,
    planner_tools: str | None = None,
) -> dict[str, Any]:
    """A record's ``provenance``: cigeval's version, the method profile (``paper`` or
    ``extended``), the prompt set (``prompt_set``: the judges' prompt sets, one string,
    :mod:`cigeval.prompts.prompt_set`), one :func:`judge_provenance` per judge, the
    scene-graph model when one apart from the judges wrote the scene graphs, the sampling
    settings sent (``sampling``: "provider default" for one not sent), and, where the
    planner was shown other tools than the official prompt lists, which (``planner_tools``)."""
    provenance: dict[str, Any] = {"cigeval_version": __version__}
    if method is not None:
        provenance["method"] = method
    judges = list(judges)
    sets = [j["prompt_set"] for j in judges if j.get("prompt_set")]
    if sets:
        provenance["prompt_set"] = ", ".join(dict.fromkeys(sets))
    provenance["judges"] = judges
    if scene_graph_model is not None:
        provenance["scene_graph_model"] = scene_graph_model
    if sampling is not None:
        provenance["sampling"] = dict(sampling)
    if planner_tools is not None:
        provenance["planner_tools"] = planner_tools
    return provenance


def assemble_score(
    *,
    sample_id: str,
    task: str,
    rubric: str,
    verdict: Verdict,
    trace: Trace,
    judge: str | None,
    config: dict[str, Any],
    passthrough: dict[str, Any],
    usage: dict[str, int] | None = None,
    images: dict[str, LoadedImage] | None = None,
    input_images: dict[str, str] | None = None,
    images_not_shown: dict[str, str] | None = None,
    image_files: dict[str, str] | None = None,
    provenance: dict[str, Any] | None = None,
    score_range: tuple[float, float] = DEFAULT_SCORE_RANGE,
    transport_failure: str | None = None,
) -> Score:
    """The Score of one sample. ``status`` is ``ok`` exactly when the verdict has a value
    within ``score_range`` (the rubric's declared range); a value outside it is refused: the
    Score is an error naming the rubric, the value and the range. ``transport_failure`` (a
    :class:`~cigeval.errors.TransportError` reason met by a model call) becomes the
    ``error_kind`` of a Score that ended in error."""
    error = verdict.error
    if error is None and verdict.value is None:
        error = f"rubric {rubric!r} returned neither a value nor an error"
    elif error is None and out_of_range(verdict.value, score_range):
        low, high = score_range
        error = (
            f"rubric {rubric!r} returned the score {verdict.value!r}, outside its range "
            f"[{low:g}, {high:g}]; refused (a rubric declares its range as score_range)"
        )
    score = Score(
        id=sample_id,
        task=task,
        rubric=rubric,
        status="ok" if error is None else "error",
        value=verdict.value if error is None else None,
        sub_scores=list(verdict.sub_scores),
        error=error,
        error_kind=f"transport.{transport_failure}" if error and transport_failure else None,
        score_range=None if score_range == DEFAULT_SCORE_RANGE else score_range,
        dimensions=dict(verdict.dimensions),
        details=dict(verdict.details),
        spread=verdict.spread,
        judge=judge,
        input_images=input_images or {},
        images_not_shown=images_not_shown or {},
        image_files=image_files or {},
        passthrough=dict(passthrough),
        usage=usage or {},
        config=config,
        provenance=provenance or {},
        fingerprint=compute_fingerprint(fingerprint_settings(rubric, config, provenance)),
        trace=trace,
    )
    if images:
        score._images = ImagePixels(images)
        score._file_hashes = file_hashes(images)
    return score
