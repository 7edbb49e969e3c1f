"""The local engine of a run: the Evaluator in this process, samples judged concurrently."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Collection, Iterable
from typing import Any

from cigeval.evaluation import Evaluator, SampleInput
from cigeval.evaluation._sync import run_sync
from cigeval.score import Score
from cigeval.signals import SIGINT, Stop, cancel_on_sigterm

#: How often the run's watch is asked whether the judge's servers are down (seconds).
WATCH_INTERVAL_S = 0.5


async def _watch(servers_down: Callable[[], bool], main: asyncio.Task[Any]) -> None:
    """Cancel ``main`` once ``servers_down`` says the run stops (the servers are down)."""
    while True:
        await asyncio.sleep(WATCH_INTERVAL_S)
        if servers_down():
            main.cancel()
            return


class LocalEngine:
    """Judges a run's samples with ``evaluator`` in this process."""

    preflight_label = "preflight"

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def prepare(self, quiet: bool) -> None:
        """Nothing to start: the evaluator is ready."""

    def preflight(self) -> list[str]:
        """The evaluator's preflight, in this process."""
        return self.evaluator.preflight()

    def judge(
        self,
        items: Iterable[SampleInput],
        refresh_ids: Collection[str],
        accept: Callable[[Score], bool],
        stop: Stop,
        servers_down: Callable[[], bool] | None = None,
    ) -> None:
        """Hand each Score to ``accept`` as its sample finishes, until the items run out,
        ``accept`` returns False, or a signal stops the run (its name goes to ``stop``).

        With ``servers_down``, the run also stops (the samples in flight cancelled, without
        a record) once it says so: no request reaches the judge's servers any more."""
        evaluator = self.evaluator

        async def consume() -> None:
            loop = asyncio.get_running_loop()
            main = asyncio.current_task()
            handled = cancel_on_sigterm(loop, main, stop.request)
            watching = (
                asyncio.ensure_future(_watch(servers_down, main)) if servers_down and main else None
            )
            try:
                stream = evaluator.stream(
                    items, evaluator.run_config.concurrency, refresh_ids=refresh_ids
                )
                async with contextlib.aclosing(stream):
                    async for score in stream:
                        if not accept(score):
                            break
            finally:
                if watching is not None:
                    watching.cancel()
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
