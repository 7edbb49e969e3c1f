"""Evaluator: judge one sample or many, concurrently, turning every failure into a record."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from cigeval.backends.base import Backend
from cigeval.config import EvalConfig, RunConfig
from cigeval.ensemble import EnsembleConfig, Judge, build_judges, combine_scores
from cigeval.errors import ConfigError, InputError
from cigeval.judge import JudgeSession
from cigeval.rubrics import get_rubric
from cigeval.runtime import SampleRun, load_sample_images
from cigeval.sample import Sample, SampleLine, sample_from_dict
from cigeval.score import Score
from cigeval.tools import resolve_tools
from cigeval.trace import ErrorEvent, Trace

T = TypeVar("T")
SampleInput = Sample | SampleLine | dict[str, Any]


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run a coroutine to completion, also from inside a running loop (e.g. Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaitable)  # type: ignore[arg-type]
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(awaitable)  # type: ignore[arg-type]
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="cigeval-run")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    result: T = box["value"]
    return result


def _error_score(sample_id: str, task: str, rubric: str, message: str, **extra: Any) -> Score:
    trace = Trace()
    trace.add(ErrorEvent(stage="input", message=message))
    return Score(
        id=sample_id, task=task, rubric=rubric, status="error", error=message, trace=trace, **extra
    )


class Evaluator:
    """A judge model (or an ensemble of judges) plus settings, built once and called on one
    sample or thousands.

    ``model`` is a spec string (``openai:gpt-4o-2024-05-13``,
    ``openai:my-model@http://localhost:8000/v1``, ``hf:/path/to/weights``), a LangChain chat
    model, any :class:`cigeval.backends.Backend`, or a list of these (an ensemble; see
    :class:`cigeval.ensemble.EnsembleConfig`).
    """

    def __init__(
        self,
        model: Any,
        *,
        config: EvalConfig | None = None,
        run_config: RunConfig | None = None,
        base_url: str | None = None,
        ensemble: EnsembleConfig | None = None,
        **config_overrides: Any,
    ) -> None:
        from cigeval.backends import ResponseCache, resolve_backend

        base = config or EvalConfig()
        try:
            self.config = (
                EvalConfig.model_validate({**base.model_dump(), **config_overrides})
                if config_overrides
                else base
            )
        except Exception as exc:
            raise ConfigError(f"invalid evaluation settings: {exc}") from None
        self.run_config = run_config or RunConfig()
        self.ensemble = ensemble or EnsembleConfig()
        self.rubric = get_rubric(self.config.rubric)
        resolve_tools(self.config.tools)  # unknown tool names fail here, not once per sample
        models = list(model) if isinstance(model, list | tuple) else [model]
        if not models:
            raise ConfigError("at least one model is needed")
        self.backends: list[Backend] = [
            resolve_backend(m, base_url=base_url, run_config=self.run_config) for m in models
        ]
        self.backend = self.backends[0]
        self.judges = build_judges(
            self.backends, self.config.generation(), self.ensemble, self.config.prompt_dir
        )
        use_cache = self.run_config.use_cache and self.run_config.cache_dir is not None
        self.tool_cache = ResponseCache(self.run_config.cache_dir) if use_cache else None  # type: ignore[arg-type]

    @property
    def judge_identity(self) -> str:
        """The judge model(s), as recorded in each Score."""
        return ",".join(dict.fromkeys(b.identity for b in self.backends))

    def _as_sample(self, item: SampleInput) -> Sample:
        if isinstance(item, Sample):
            return item
        if isinstance(item, SampleLine):
            if item.sample is None:
                raise InputError(item.error or "invalid sample", item.sample_id)
            return item.sample
        return sample_from_dict(item)

    def _config_record(self) -> dict[str, Any]:
        record = self.config.record()
        if len(self.judges) > 1:
            record["ensemble"] = self.ensemble.model_dump(mode="json")
        return record

    async def _judge_once(
        self, sample: Sample, images: dict[str, Any], judge: Judge, encoded: dict[int, Any]
    ) -> tuple[Score, JudgeSession]:
        trace = Trace()
        config = self.config
        if judge.prompt_dir != config.prompt_dir:
            config = config.model_copy(update={"prompt_dir": judge.prompt_dir})
        session = JudgeSession(
            judge.backend, judge.settings, trace, config.max_parse_retries, judge.prompt_dir
        )
        run = SampleRun(sample, images, config, session, trace, self.tool_cache, _encoded=encoded)
        try:
            score = await self.rubric.evaluate(run)
        except Exception as exc:  # one failed judgment must never stop the others
            message = f"{type(exc).__name__}: {exc}"
            trace.add(ErrorEvent(stage="evaluate", message=message))
            score = Score(
                id=sample.id,
                task=sample.task,
                rubric=self.config.rubric,
                status="error",
                error=message,
            )
        score.trace = trace
        return score, session

    async def evaluate_async(self, item: SampleInput) -> Score:
        """Judge one sample. Never raises for a bad sample: the Score says ``error`` and why."""
        started = time.perf_counter()
        raw_id, raw_task = _identify(item)
        try:
            sample = self._as_sample(item)
            self.rubric.validate(sample)
            images = load_sample_images(sample)
        except Exception as exc:
            message = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            score = _error_score(raw_id, raw_task, self.config.rubric, message)
            if isinstance(item, Sample):
                score.passthrough.update(item.passthrough())
            elif isinstance(item, dict):
                score.passthrough.update({k: item[k] for k in ("model", "human") if k in item})
            score.judge, score.config = self.judge_identity, self._config_record()
            return score
        encoded: dict[int, Any] = {}
        outcomes = await asyncio.gather(
            *(self._judge_once(sample, images, judge, encoded) for judge in self.judges)
        )
        if len(outcomes) == 1:
            score = outcomes[0][0]
        else:
            score = combine_scores(
                [o[0] for o in outcomes],
                [j.label for j in self.judges],
                self.ensemble,
                self.config.aggregate,
                sub_question_level=getattr(self.rubric, "combines_sub_scores", False),
            )
        sessions = [o[1] for o in outcomes]
        score._images.update(images)
        score.passthrough.update(sample.passthrough())
        score.judge = self.judge_identity
        score.config = self._config_record()
        score.usage = {
            "calls": sum(s.calls for s in sessions),
            "cached_calls": sum(1 for e in score.trace.model_calls() if e.cached),
            "prompt_tokens": sum(s.usage.prompt_tokens for s in sessions),
            "completion_tokens": sum(s.usage.completion_tokens for s in sessions),
            "wall_ms": round((time.perf_counter() - started) * 1000),
        }
        return score

    def evaluate(self, item: SampleInput) -> Score:
        """Synchronous :meth:`evaluate_async`."""
        return run_sync(self._closing(self.evaluate_async(item)))

    async def aclose(self) -> None:
        """Close the HTTP connections the judges opened in the running event loop.

        The synchronous methods do this themselves; call it when done with :meth:`stream` or
        the ``*_async`` methods in a loop that will end (connections left open are closed by
        the garbage collector later, which fails noisily once their loop is closed).
        """
        for backend in self.backends:
            inner = getattr(backend, "inner", backend)  # CachedBackend wraps the real one
            close = getattr(inner, "aclose", None)
            if close is not None:
                await close()

    async def _closing(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        finally:
            await self.aclose()

    async def stream(
        self, items: Iterable[SampleInput], concurrency: int | None = None
    ) -> AsyncIterator[Score]:
        """Yield Scores as samples finish, at most ``concurrency`` at once.

        ``items`` is consumed lazily, so memory stays bounded for any number of samples.
        """
        limit = concurrency or self.run_config.concurrency
        iterator = iter(items)
        pending: set[asyncio.Task[Score]] = set()
        exhausted = False
        while pending or not exhausted:
            while not exhausted and len(pending) < limit:
                try:
                    item = next(iterator)
                except StopIteration:
                    exhausted = True
                    break
                pending.add(asyncio.ensure_future(self.evaluate_async(item)))
            if not pending:
                break
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                yield task.result()

    async def evaluate_many_async(
        self, items: Iterable[SampleInput], concurrency: int | None = None
    ) -> list[Score]:
        """Judge many samples concurrently; results in input order."""
        materialised = list(items)
        indexed = [(i, x) for i, x in enumerate(materialised)]
        results: list[Score | None] = [None] * len(materialised)
        semaphore = asyncio.Semaphore(concurrency or self.run_config.concurrency)

        async def one(index: int, item: SampleInput) -> None:
            async with semaphore:
                results[index] = await self.evaluate_async(item)

        await asyncio.gather(*(one(i, x) for i, x in indexed))
        return [r for r in results if r is not None]

    def evaluate_many(
        self, items: Iterable[SampleInput], concurrency: int | None = None
    ) -> list[Score]:
        """Synchronous :meth:`evaluate_many_async`."""
        return run_sync(self._closing(self.evaluate_many_async(items, concurrency)))


def _identify(item: SampleInput) -> tuple[str, str]:
    if isinstance(item, Sample):
        return item.id, item.task
    if isinstance(item, SampleLine):
        raw = item.raw or {}
        return item.sample_id, str(raw.get("task", "unknown"))
    if isinstance(item, dict):
        return str(item.get("id", "unknown")), str(item.get("task", "unknown"))
    return "unknown", "unknown"


def evaluate(sample: SampleInput, model: Any, **kwargs: Any) -> Score:
    """Judge one sample: ``cigeval.evaluate(sample, model="openai:gpt-4o-2024-05-13")``.

    Keyword arguments go to :class:`Evaluator` (config, run_config, base_url, or any
    :class:`EvalConfig` field such as ``rubric="viescore"``).
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
    from cigeval.sample import iter_samples_file

    items: Iterable[SampleInput] = (
        iter_samples_file(samples) if isinstance(samples, str | Path) else samples
    )
    return Evaluator(model, **kwargs).evaluate_many(items, concurrency)


async def evaluate_many_async(
    samples: Iterable[SampleInput], model: Any, *, concurrency: int | None = None, **kwargs: Any
) -> list[Score]:
    """Async :func:`evaluate_many`."""
    return await Evaluator(model, **kwargs).evaluate_many_async(samples, concurrency)
