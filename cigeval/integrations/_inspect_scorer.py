"""The inspect_ai scorer behind :func:`cigeval.integrations.inspect_ai.inspect_scorer`
(imports inspect_ai: loaded only when a scorer is made)."""

from __future__ import annotations

import contextlib
import copy
from collections import Counter
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ContentImage
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from cigeval.backends.routing import routing_calls
from cigeval.errors import CigevalError, InputError, PreflightError
from cigeval.evaluation import Evaluator
from cigeval.integrations._images import image_input
from cigeval.integrations._inspect_model import InspectRoute, JudgeModels
from cigeval.integrations._keys import ERROR_KEY, OUTPUT_KEY, SAMPLE_KEY
from cigeval.sample import Sample, sample_from_dict
from cigeval.score import Score as CigevalScore


@scorer(metrics=[mean(), stderr()], name="cigeval")
def cigeval_judge(
    model: Any,
    task: str | None = None,
    output_key: str = OUTPUT_KEY,
    model_events: bool = True,
    preview_size: int | None = 256,
    **settings: Any,
) -> Scorer:
    """cigeval's judgement of each sample's images (see ``inspect_scorer``)."""
    evaluator = Evaluator(model, **settings)
    models = JudgeModels() if model_events else None
    if models is not None:
        # a sample replayed whole from the answer cache makes no call, so its transcript
        # would show no judge: each call is answered from the cache instead, and recorded
        evaluator.replay = None

    async def score(state: TaskState, target: Target) -> Score:
        problem = state.metadata.get(ERROR_KEY)
        if problem:
            return Score.unscored(reason="scoring_failed", explanation=str(problem))
        try:
            outputs = _outputs(state, output_key)
            if not outputs:
                return Score.unscored(
                    reason="no_response",
                    explanation=f"sample {str(state.sample_id)!r}: no output image to judge (none "
                    f"in the model's messages, none recorded as {output_key!r} in the store "
                    "or the metadata)",
                )
            samples = [
                _cigeval_sample(state, task, output, index, len(outputs))
                for index, output in enumerate(outputs, start=1)
            ]
        except InputError as exc:
            return Score.unscored(reason="scoring_failed", explanation=_named(state, exc))
        route = InspectRoute(models) if models is not None else None
        judged: list[CigevalScore] = []
        for sample in samples:
            try:
                with routing_calls(route) if route is not None else contextlib.nullcontext():
                    judged.append(await evaluator.evaluate_async(sample))
            except PreflightError:
                raise  # the judge cannot work at all: a clear error, not a column of NaN
            except CigevalError as exc:
                return Score.unscored(reason="scoring_failed", explanation=str(exc))
            if route is not None and route.exceeded is not None:
                raise route.exceeded  # an inspect limit stops the sample, as for any model
        return _inspect_score(judged, preview_size)

    return score


def _named(state: TaskState, error: Exception) -> str:
    """``error``'s message, beginning with the sample it is about."""
    message = str(error)
    prefix = f"sample {str(state.sample_id)!r}: "
    return message if message.startswith(prefix) else prefix + message


def _outputs(state: TaskState, key: str) -> list[str | bytes]:
    """The output image(s) to judge, as bytes or paths (see ``inspect_scorer``)."""
    recorded = state.store.get(key)
    if recorded:
        return _references(recorded, f"the output recorded as {key!r} in the store")
    last = [state.output.message] if state.output.choices else []
    for message in [*last, *reversed(state.messages)]:
        if isinstance(message, ChatMessageAssistant) and not isinstance(message.content, str):
            found = [c.image for c in message.content if isinstance(c, ContentImage)]
            if found:
                return _references(found, "an image of the model's output")
    recorded = state.metadata.get(key)
    if recorded:
        return _references(recorded, f"the output recorded as {key!r} in the metadata")
    return []


def _references(value: Any, what: str) -> list[str | bytes]:
    """One or several image references (paths, data URIs) as cigeval image inputs."""
    items = value if isinstance(value, list | tuple) else [value]
    found: list[str | bytes] = []
    for item in items:
        if not isinstance(item, str):
            raise InputError(f"{what} is a {type(item).__name__}, not a path or a data URI")
        found.append(image_input(item, what))
    return found


def _cigeval_sample(
    state: TaskState, task: str | None, output: str | bytes, index: int, count: int
) -> Sample:
    """The cigeval sample of one output image of ``state``."""
    record = copy.deepcopy(state.metadata.get(SAMPLE_KEY))
    if record is None:
        if task is None:
            raise InputError(
                "no cigeval sample in the metadata (made by inspect_samples) and the scorer "
                "was given no task="
            )
        record = {"task": task, **_text_condition(task, state)}
    record["id"] = str(state.sample_id) if count == 1 else f"{state.sample_id}#output{index}"
    images = {
        role: _condition_image(value, role) for role, value in record.get("images", {}).items()
    }
    images["output"] = output
    record["images"] = images
    if "candidates" in record:
        record["candidates"] = {
            label: image_input(v, f"candidate {label}") for label, v in record["candidates"].items()
        }
    return sample_from_dict(record)


def _condition_image(value: Any, role: str) -> Any:
    """A condition image of the stored cigeval sample, data URIs decoded."""
    if isinstance(value, list):
        return [image_input(v, f"{role}[{i}] image") for i, v in enumerate(value)]
    return image_input(value, f"{role} image")


def _text_condition(task: str, state: TaskState) -> dict[str, str]:
    """The input text as the one text field of ``task`` (a sample without cigeval metadata)."""
    from cigeval.tasks import get_task

    fields = get_task(task).text_fields
    if len(fields) != 1:
        raise InputError(
            f"task {task!r} has the text fields {', '.join(fields) or 'none'}: its samples "
            "need inspect_samples' metadata, the input text alone cannot fill them",
            str(state.sample_id),
        )
    return {fields[0]: state.input_text}


def _inspect_score(judged: list[CigevalScore], preview_size: int | None) -> Score:
    """The inspect Score of one sample's cigeval Score(s) (one per output image)."""
    explanation = "\n\n".join(_explained(s, preview_size) for s in judged)
    metadata = {
        "cigeval": [_score_metadata(s) for s in judged],
        "tools": {s.question_id: s.tool for one in judged for s in one.sub_scores},
    }
    failed = [s for s in judged if not s.ok or s.value is None]
    if failed:
        errors = "; ".join(f"{s.id}: {s.error or 'no value'}" for s in failed)
        return Score.unscored(
            reason="grader_failed",
            explanation=f"cigeval could not judge {errors}\n{explanation}",
            metadata=metadata,
        )
    values = [float(s.value) for s in judged if s.value is not None]
    return Score(value=sum(values) / len(values), explanation=explanation, metadata=metadata)


def _explained(score: CigevalScore, preview_size: int | None) -> str:
    """``score``'s summary with its reasoning, after the judged output image (a Markdown image
    of a ``preview_size`` thumbnail, which ``inspect view`` shows; None: no image)."""
    summary = score.summary(reasoning=True)
    if preview_size is None:
        return summary
    try:
        image = score.images.get("output")
        if image is None:
            return summary
        from cigeval.report.images import thumbnail_data_uri

        preview = thumbnail_data_uri(image, preview_size)
    except (OSError, ValueError) as exc:  # an image that cannot be read again: the text only
        return f"{summary}\n(the judged image cannot be shown: {exc})"
    return f"![{score.id}: the judged output]({preview})\n\n{summary}"


def _score_metadata(score: CigevalScore) -> dict[str, Any]:
    """What an inspect Score keeps of a cigeval Score: sub-scores, judge, images, trace."""
    calls = score.trace.model_calls()
    return {
        "id": score.id,
        "task": score.task,
        "rubric": score.rubric,
        "status": score.status,
        "value": score.value,
        "error": score.error,
        "judge": score.judge,
        "sub_scores": [
            s.model_dump(
                mode="json",
                include={
                    "question_id",
                    "score",
                    "reasoning",
                    "tool",
                    "tool_query",
                    "note",
                    "degraded",
                    "error",
                },
            )
            for s in score.sub_scores
        ],
        "input_images": score.input_images,
        "usage": score.usage,
        "trace": {
            "events": dict(Counter(e.type for e in score.trace.events)),
            "model_calls": dict(Counter(e.purpose for e in calls)),
            "cached_calls": sum(1 for e in calls if e.cached),
            "prompt_tokens": sum(e.prompt_tokens for e in calls),
            "completion_tokens": sum(e.completion_tokens for e in calls),
        },
    }
