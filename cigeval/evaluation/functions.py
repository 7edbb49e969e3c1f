"""One-call entry points: ``cigeval.evaluate(sample, model=...)`` and friends."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cigeval.config import RunConfig
from cigeval.errors import ConfigError
from cigeval.evaluation.evaluator import Evaluator, SampleInput
from cigeval.sample import iter_samples_file
from cigeval.score import Score


def evaluate(sample: SampleInput, model: Any, **kwargs: Any) -> Score:
    """Judge one sample: ``cigeval.evaluate(sample, model="openai:gpt-4o-2024-05-13")``.

    Keyword arguments go to :class:`Evaluator` (config, run_config, base_url, ensemble, or
    any :class:`cigeval.EvalConfig` field such as ``rubric="viescore"``).
    """
    return Evaluator(model, **kwargs).evaluate(sample)


async def evaluate_async(sample: SampleInput, model: Any, **kwargs: Any) -> Score:
    """Async :func:`evaluate`."""
    return await Evaluator(model, **kwargs).evaluate_async(sample)


def evaluate_many(
    samples: Iterable[SampleInput] | str | Path | Any,
    model: Any,
    *,
    concurrency: int | None = None,
    columns: str | Mapping[str, str] | None = None,
    task: str | None = None,
    **kwargs: Any,
) -> list[Score]:
    """Judge many samples; results in input order.

    ``samples`` is a list, the path of a samples JSONL, or a Hugging Face
    ``datasets.Dataset`` / ``IterableDataset`` with ``columns`` saying which column holds
    which sample field (``{"task": "category", "prompt": "caption", "output": "image"}``;
    see :class:`cigeval.hf_datasets.ColumnMap`) and ``task`` the task of every row when no
    column holds it. Other keyword arguments go to :class:`Evaluator`.

    ``concurrency`` samples are judged at once, with as many model calls in flight as that
    many samples need (``RunConfig.max_calls_in_flight`` when set, else 3 per sample).
    """
    items = _items(samples, columns, task)
    return Evaluator(model, **_sized(kwargs, concurrency)).evaluate_many(items)


async def evaluate_many_async(
    samples: Iterable[SampleInput] | Any,
    model: Any,
    *,
    concurrency: int | None = None,
    columns: str | Mapping[str, str] | None = None,
    task: str | None = None,
    **kwargs: Any,
) -> list[Score]:
    """Async :func:`evaluate_many`."""
    items = _items(samples, columns, task)
    return await Evaluator(model, **_sized(kwargs, concurrency)).evaluate_many_async(items)


def _sized(kwargs: dict[str, Any], concurrency: int | None) -> dict[str, Any]:
    """The Evaluator's arguments with ``concurrency`` as its run's concurrency, so that the
    limit of calls in flight its judges are built with follows it."""
    if concurrency is None:
        return kwargs
    run_config = kwargs.get("run_config") or RunConfig()
    try:
        sized = RunConfig.model_validate({**run_config.model_dump(), "concurrency": concurrency})
    except Exception as exc:
        raise ConfigError(f"invalid concurrency {concurrency!r}: {exc}") from None
    return {**kwargs, "run_config": sized}


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
