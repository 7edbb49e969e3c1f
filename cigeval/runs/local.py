"""The local engine of a run: the Evaluator in this process, samples judged concurrently."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from cigeval.evaluation._sync import run_sync
from cigeval.runs.preflight import preflight_step
from cigeval.runs.signals import SIGINT, Stop, cancel_on_sigterm

if TYPE_CHECKING:
    from cigeval.evaluation import Evaluator, SampleInput
    from cigeval.score import Score


class LocalEngine:
    """Judges a run's samples with ``evaluator`` in this process."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def prepare(self, quiet: bool) -> None:
        """The preflight (unless ``run_config.preflight`` is off)."""
        if self.evaluator.run_config.preflight:
            preflight_step(self.evaluator.preflight, quiet)

    def judge(
        self,
        items: Iterable[SampleInput],
        refresh_ids: Collection[str],
        accept: Callable[[Score], bool],
        stop: Stop,
    ) -> None:
        """Hand each Score to ``accept`` as its sample finishes, until the items run out,
        ``accept`` returns False, or a signal stops the run (its name goes to ``stop``)."""
        evaluator = self.evaluator

        async def consume() -> None:
            loop = asyncio.get_running_loop()
            handled = cancel_on_sigterm(loop, asyncio.current_task(), stop.request)
            try:
                stream = evaluator.stream(
                    items, evaluator.run_config.concurrency, refresh_ids=refresh_ids
                )
                async with contextlib.aclosing(stream):
                    async for score in stream:
                        if not accept(score):
                            break
            finally:
                if handled:
                    loop.remove_signal_handler(signal.SIGTERM)
                await evaluator.aclose()

        try:
            run_sync(consume())
        except asyncio.CancelledError:
            if stop.reason is None:
                raise
        except KeyboardInterrupt:
            stop.request(SIGINT)

    def batch_stats(self) -> Any:
        """What the Batch API path did (``--batch``), or None."""
        batch = self.evaluator.batch
        return batch.stats if batch is not None else None

    def close(self) -> None:
        """Nothing to release: the evaluator closes its connections after each run."""
