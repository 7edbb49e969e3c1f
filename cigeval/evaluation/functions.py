"""One-call entry points: ``cigeval.evaluate(sample, model=...)`` and friends."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

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
    samples: Iterable[SampleInput] | str | Path,
    model: Any,
    *,
    concurrency: int | None = None,
    **kwargs: Any,
) -> list[Score]:
    """Judge many samples (a list, or the path of a samples JSONL); results in input order."""
    items: Iterable[SampleInput] = (
        iter_samples_file(samples) if isinstance(samples, str | Path) else samples
    )
    return Evaluator(model, **kwargs).evaluate_many(items, concurrency)


async def evaluate_many_async(
    samples: Iterable[SampleInput], model: Any, *, concurrency: int | None = None, **kwargs: Any
) -> list[Score]:
    """Async :func:`evaluate_many`."""
    return await Evaluator(model, **kwargs).evaluate_many_async(samples, concurrency)
