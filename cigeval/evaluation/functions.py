"""One-call entry points: ``cigeval.evaluate(sample, model=...)`` and friends.

Each takes the judge's settings as keywords (``rubric=``, ``tools=``, ``method=``, ...): the
fields of :class:`cigeval.EvalConfig`, listed in each function's help. A keyword left at
None keeps the value of ``config`` (or, without one, the default that ``method`` gives).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from typing_extensions import TypedDict, Unpack

from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.errors import ConfigError
from cigeval.evaluation.evaluator import Evaluator, SampleInput
from cigeval.method import Method
from cigeval.rules import Aggregate
from cigeval.sample import iter_samples_file
from cigeval.score import Score
from cigeval.tools.settings import DifferenceConfig, GroundingConfig, ZoomConfig

#: What every entry point's help says of the keywords they share (the EvalConfig fields'
#: own descriptions are added below it, so there is one text per setting).
_SHARED_KEYWORDS = """
Keywords shared by evaluate, evaluate_async, evaluate_many and evaluate_many_async (a
keyword left at None keeps ``config``'s value, or the default that ``method`` gives):

config: an :class:`cigeval.EvalConfig` to start from; the keywords below override it.
run_config: a :class:`cigeval.RunConfig` (concurrency, limits, cache, retries).
base_url: the server URL of ``openai:`` specs without one (else $OPENAI_BASE_URL).
ensemble: an :class:`cigeval.EnsembleConfig` (several judgments per sample, combined).
preflight: False skips the checks made before the first sample (judge server, tool
    weights); default: ``run_config.preflight``.
"""


def _settings_help() -> str:
    """The shared keywords, then every EvalConfig field with its description."""
    lines = [_SHARED_KEYWORDS]
    for name, field in EvalConfig.model_fields.items():
        about = field.description or (field.annotation.__doc__ or "").strip().split("\n")[0]
        lines.append(f"{name}: {about}")
    lines.append(
        "\ntools also takes the comma-separated string of --tools: "
        'tools="Difference,Scene Graph" is tools=["Difference", "Scene Graph"]. '
        "seed=None keeps config's seed (the paper method sends none; extended sends 0)."
    )
    return "\n".join(lines)


class Settings(TypedDict, total=False):
    """The keywords every entry point takes (each None keeps ``config``'s value, or the
    default that ``method`` gives): the run's and the ensemble's settings, then every
    :class:`cigeval.EvalConfig` field."""

    config: EvalConfig | None
    run_config: RunConfig | None
    base_url: str | None
    ensemble: EnsembleConfig | None
    preflight: bool | None
    method: Method | None
    rubric: str | None
    tools: str | Sequence[str] | None
    temperature: float | None
    max_tokens: int | None
    max_tokens_cap: int | None
    max_reply_chars: int | None
    seed: int | None
    top_p: float | None
    aggregate: Aggregate | None
    max_rounds: int | None
    max_parse_retries: int | None
    reply_parsing: Literal["official", "strict"] | None
    tool_errors: Literal["fallback", "fail"] | None
    tool_use: Literal["official", "any"] | None
    tool_text: Literal["focus", "detailed"] | None
    planner_prompt: Literal["paper", "extended"] | None
    scoring_rules: Literal["paper", "extended"] | None
    scene_graph_prompt: Literal["paper", "extended"] | None
    request_layout: Literal["official", "cigeval"] | None
    scene_graph_calls: Literal["per_question", "per_image"] | None
    scene_graph_text: Literal["as_written", "json"] | None
    scene_graph_model: str | None
    highlight_large_boxes: Literal["dim", "undimmed"] | None
    grounding: GroundingConfig | dict[str, Any] | None
    difference: DifferenceConfig | dict[str, Any] | None
    zoom: ZoomConfig | dict[str, Any] | None
    image_encoding: Literal["jpeg75", "original"] | None
    image_conversion: Literal["official", "rescale"] | None
    image_format: Literal["PNG", "JPEG"] | None
    prompt_dir: str | None
    rubric_options: dict[str, Any] | None


F = TypeVar("F", bound=Callable[..., Any])


def _takes_settings(function: F) -> F:
    """Show :class:`Settings` as ``function``'s own typed keyword-only arguments to help(),
    IPython and editors that read the signature (it is written once, here, for all four);
    its help lists each with its description."""
    hints = typing.get_type_hints(Settings)
    own = inspect.signature(function)
    kept = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    keywords = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=hint)
        for name, hint in hints.items()
    ]
    function.__signature__ = own.replace(parameters=[*kept, *keywords])  # type: ignore[attr-defined]
    annotations = {k: v for k, v in function.__annotations__.items() if k != "settings"}
    function.__annotations__ = {**annotations, **hints}
    function.__doc__ = f"{inspect.cleandoc(function.__doc__ or '')}\n{_settings_help()}"
    return function


@_takes_settings
def evaluate(sample: SampleInput, model: Any, **settings: Unpack[Settings]) -> Score:
    """Judge one sample: ``cigeval.evaluate(sample, model="openai:gpt-4o-2024-05-13")``.

    ``sample`` is a :class:`cigeval.Sample`, a line of a samples file or a dict;
    ``model`` a judge spec string, a LangChain chat model, a :class:`cigeval.Backend`, or a
    list of these (an ensemble, see ``ensemble``). Returns the :class:`cigeval.Score`; a
    sample that cannot be judged is a Score with ``status="error"`` naming the problem.
    """
    return Evaluator(model, **_given(settings)).evaluate(sample)


@_takes_settings
async def evaluate_async(sample: SampleInput, model: Any, **settings: Unpack[Settings]) -> Score:
    """Async :func:`evaluate`: ``score = await cigeval.evaluate_async(sample, model=...)``."""
    return await Evaluator(model, **_given(settings)).evaluate_async(sample)


@_takes_settings
def evaluate_many(
    samples: Iterable[SampleInput] | str | Path | Any,
    model: Any,
    *,
    concurrency: int | None = None,
    columns: str | Mapping[str, str] | None = None,
    task: str | None = None,
    **settings: Unpack[Settings],
) -> list[Score]:
    """Judge many samples; results in input order.

    ``samples`` is a list, the path of a samples JSONL, or a Hugging Face
    ``datasets.Dataset`` / ``IterableDataset`` with ``columns`` saying which column holds
    which sample field (``{"task": "category", "prompt": "caption", "output": "image"}``;
    see :class:`cigeval.hf_datasets.ColumnMap`) and ``task`` the task of every row when no
    column holds it.

    ``concurrency`` samples are judged at once, with as many model calls in flight as that
    many samples need (``RunConfig.max_calls_in_flight`` when set, else 3 per sample).
    """
    items = _items(samples, columns, task)
    return Evaluator(model, **_given(settings)).evaluate_many(items, concurrency)


@_takes_settings
async def evaluate_many_async(
    samples: Iterable[SampleInput] | str | Path | Any,
    model: Any,
    *,
    concurrency: int | None = None,
    columns: str | Mapping[str, str] | None = None,
    task: str | None = None,
    **settings: Unpack[Settings],
) -> list[Score]:
    """Async :func:`evaluate_many`."""
    items = _items(samples, columns, task)
    judge = Evaluator(model, **_given(settings))
    return await judge.evaluate_many_async(items, concurrency)


def _given(settings: Settings) -> dict[str, Any]:
    """The keywords a caller gave (not None), for :class:`Evaluator`."""
    return {k: v for k, v in settings.items() if v is not None}


def _items(
    samples: Any, columns: str | Mapping[str, str] | None, task: str | None
) -> Iterable[SampleInput]:
    """The samples of a list, a samples file or a Hugging Face dataset."""
    from cigeval.hf_datasets import dataset_samples, is_dataset

    if is_dataset(samples):
        if columns is None:
            raise ConfigError(
                "a dataset needs columns= saying which column holds which sample field, "
                "e.g. {'task': 'category', 'prompt': 'caption', 'output': 'image'}"
            )
        return dataset_samples(samples, columns, task=task)
    if columns is not None or task is not None:
        raise ConfigError("columns= and task= apply to a Hugging Face dataset only")
    if isinstance(samples, str | Path):
        return iter_samples_file(samples)
    items: Iterable[SampleInput] = samples
    return items
