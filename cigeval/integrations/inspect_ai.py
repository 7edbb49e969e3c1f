"""cigeval as an inspect_ai scorer: the judge looks at the images of each sample.

inspect_ai's model-graded scorers pass the grader text only; :func:`inspect_scorer` hands a
sample's images to cigeval instead: the output image(s) the solver produced, the condition
images (source, mask, subject(s), control) and the text condition of the sample, judged with
any cigeval judge, rubric and method. :func:`inspect_samples` turns cigeval samples (a list,
a samples JSONL, or :func:`cigeval.meta.imagenhub_samples`) into inspect samples that carry
what the scorer needs. Needs the ``inspect`` extra (``pip install 'cigeval[inspect]'``);
inspect_ai is imported when one of these functions is called, not with this module.
See docs/inspect.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval.errors import InputError, MissingDependency
from cigeval.integrations._keys import ERROR_KEY, OUTPUT_KEY, SAMPLE_KEY

if TYPE_CHECKING:
    from inspect_ai.dataset import Sample as InspectSample
    from inspect_ai.scorer import Scorer


#: The text fields shown to the solver in the input message, in this order.
_CONDITION_FIELDS = ("prompt", "instruction", "subject", "concepts", "control_type")
#: The image roles that are outputs, never conditions.
_OUTPUT_ROLES = ("output", "outputs")


def inspect_scorer(
    model: Any,
    *,
    task: str | None = None,
    output_key: str = OUTPUT_KEY,
    model_events: bool = True,
    preview_size: int | None = 256,
    **settings: Any,
) -> Scorer:
    """An inspect_ai scorer that judges each sample's images with cigeval.

    ``model`` is any cigeval judge: a spec string (``"openai:gpt-4o-2024-05-13"``,
    ``"openai:my-vlm@http://localhost:8000/v1"``, ``"hf:..."``), a :class:`cigeval.Backend`
    or a list of them (an ensemble). ``settings`` are those of :func:`cigeval.evaluate`
    (``rubric=``, ``method=``, ``tools=``, ``config=``, ``run_config=``, ``base_url=``,
    ``ensemble=``, ``preflight=``, ...).

    What is judged, per sample: the cigeval sample that :func:`inspect_samples` stored in
    the metadata (task, text condition, condition images), or, for a sample without one,
    ``task`` (a task with one text field, e.g. ``"text_guided_ig"``) with the input text
    as that field. The output: the image(s) recorded under ``output_key`` in
    ``state.store``, else the images of the model's last message that has any
    (``ContentImage``: a data URI or a local path), else those recorded under
    ``output_key`` in ``state.metadata`` (where :func:`inspect_samples` keeps a sample's
    existing output). Several output images are each judged; the value is their mean.

    The judge's calls go through inspect's model layer (``model_events=True``): each is a
    model event of the sample's transcript (the messages with their images, the reply, the
    tokens), under the model name ``cigeval/<judge>``, counted in the eval's usage totals
    and held to ``--max-connections`` and any token limit in force. Answers from cigeval's
    cache are events too, marked ``cached`` in the output's metadata and counting no
    tokens; a sample is then judged call by call, never replayed whole from the cache.

    The Score: ``value`` is cigeval's score (0-1, e.g. the minimum of the sub-scores / 10);
    ``explanation`` the judged output image (a Markdown image, ``preview_size`` pixels on
    its longest side; None: no image), then one line per sub-question with its score, tool
    and reasoning;
    ``metadata`` the sub-scores, the tool each used, the judge and the trace's summary (model
    calls by purpose, tokens, events). A sample cigeval cannot judge (an unreadable image, a
    judge that failed on it) is unscored (NaN, left out of the metrics) with the reason in
    its explanation; the other samples are scored as usual. A judge that fails its preflight
    (server down, weights missing) fails the scorer with that error.
    """
    _require_inspect()
    from cigeval.integrations._inspect_scorer import cigeval_judge

    return cigeval_judge(
        model,
        task=task,
        output_key=output_key,
        model_events=model_events,
        preview_size=preview_size,
        **settings,
    )


def inspect_samples(
    samples: Iterable[Any] | str | Path,
    *,
    base_dir: str | Path | None = None,
    outputs: bool = True,
) -> list[InspectSample]:
    """cigeval samples as inspect_ai samples, for a ``Task(dataset=...)`` scored by
    :func:`inspect_scorer`.

    ``samples``: cigeval samples (dicts, :class:`cigeval.Sample`, samples-file lines), the
    path of a samples JSONL, or :func:`cigeval.meta.imagenhub_samples` (ImagenHub's
    benchmark samples with their generators' images). Relative image paths resolve against
    ``base_dir`` (for a JSONL: its folder).

    Each inspect sample has the cigeval id, an input message with the task, the text
    condition and the condition images (what a generator or editor under test is given),
    and the cigeval sample in ``metadata["cigeval_sample"]``. ``outputs=True`` also records
    a sample's own output image(s) in ``metadata["cigeval_output"]``, so a solver that makes
    no image (judging existing outputs, e.g. ImagenHub's) is scored on them; a solver's own
    images take precedence. A sample that is not valid stays in the list with its problem in
    ``metadata["cigeval_error"]``: the scorer leaves it unscored, naming the problem.
    """
    _require_inspect()

    from cigeval.sample import Sample, SampleLine, iter_samples_file, sample_from_dict

    folder = Path(base_dir) if base_dir is not None else None
    if isinstance(samples, str | Path):
        folder = folder or Path(samples).parent
        samples = iter_samples_file(samples)
    converted: list[InspectSample] = []
    for number, item in enumerate(samples, start=1):
        try:
            if isinstance(item, SampleLine):
                if item.sample is None:
                    raise InputError(item.error or "invalid sample", item.sample_id)
                sample = item.sample
            elif isinstance(item, Sample):
                sample = item
            else:
                sample = sample_from_dict(dict(item), base_dir=folder)
            _check_conditions(sample)
        except InputError as exc:
            converted.append(_invalid_sample(item, number, str(exc)))
            continue
        converted.append(_inspect_sample(sample, outputs))
    return converted


def _check_conditions(sample: Any) -> None:
    """The task's checks of ``sample`` (text fields, condition images), its output aside:
    the solver makes that."""
    from cigeval.tasks import get_task

    images = sample.images
    if not any(role in images.provided() for role in _OUTPUT_ROLES):
        images = images.model_copy(update={"output": "the solver's output"})
    get_task(sample.task).validate_sample(sample.model_copy(update={"images": images}))


def _inspect_sample(sample: Any, outputs: bool) -> InspectSample:
    """One valid cigeval Sample as an inspect sample."""
    from inspect_ai.dataset import Sample as InspectSample
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    from cigeval.integrations._images import image_reference
    from cigeval.tasks import get_task
    from cigeval.tasks.labels import condition_label

    base = sample.base_dir
    images: dict[str, Any] = {}
    for role, value in sample.images.provided().items():
        if isinstance(value, list):
            images[role] = [image_reference(v, base) for v in value]
        else:
            images[role] = image_reference(value, base)
    record = sample.model_dump(
        mode="json", exclude={"images", "candidates", "base_dir"}, exclude_none=True
    )
    record["images"] = {r: v for r, v in images.items() if r not in _OUTPUT_ROLES}
    if sample.candidates:
        record["candidates"] = {
            label: image_reference(v, base) for label, v in sample.candidates.items()
        }
    lines = [f"{get_task(sample.task).title}."]
    for field in (*_CONDITION_FIELDS, *get_task(sample.task).declared_text_fields):
        value = getattr(sample, field, None)
        if value and field in record:
            text = ", ".join(value) if isinstance(value, list) else str(value)
            line = f"{condition_label(field)}: {text}"
            if line not in lines:
                lines.append(line)
    content: list[ContentText | ContentImage] = [ContentText(text="\n".join(lines))]
    for role, value in record["images"].items():
        for index, reference in enumerate(value if isinstance(value, list) else [value]):
            label = f"{role}[{index}]" if isinstance(value, list) else role
            content.append(ContentText(text=f"[{label}]"))
            content.append(ContentImage(image=reference))
    metadata: dict[str, Any] = {SAMPLE_KEY: record}
    given = [images[r] for r in _OUTPUT_ROLES if r in images]
    if outputs and given:
        found = given[0]
        metadata[OUTPUT_KEY] = found if isinstance(found, str) or len(found) != 1 else found[0]
    return InspectSample(
        input=[ChatMessageUser(content=content)], target="", id=sample.id, metadata=metadata
    )


def _invalid_sample(item: Any, number: int, error: str) -> InspectSample:
    """An invalid cigeval sample as an inspect sample that carries its problem."""
    from inspect_ai.dataset import Sample as InspectSample

    raw = getattr(item, "raw", None) if not isinstance(item, dict) else item
    sample_id = raw.get("id") if isinstance(raw, dict) else getattr(item, "sample_id", None)
    identity = str(sample_id) if sample_id is not None else f"invalid-{number}"
    shown = json.dumps(raw, default=str)[:2000] if isinstance(raw, dict) else ""
    return InspectSample(
        input=shown or f"invalid cigeval sample {identity}",
        target="",
        id=identity,
        metadata={ERROR_KEY: error},
    )


def _require_inspect() -> None:
    """A MissingDependency naming the extra when inspect_ai is not installed."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError as exc:
        raise MissingDependency("inspect_ai", "inspect", "the inspect_ai integration") from exc
