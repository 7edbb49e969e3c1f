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
    from cigeval.runs.breaker import ServerWatching
    from cigeval.score import Score


#: How often the run's watch is asked whether the judge's servers are down (seconds).
WATCH_INTERVAL_S = 0.5


async def _watch(servers: ServerWatching, main: asyncio.Task[Any]) -> None:
    """Cancel ``main`` once the watch says the servers are down and the run agrees to stop."""
    while True:
        await asyncio.sleep(WATCH_INTERVAL_S)
        seen = servers.watch.down()
        if seen is not None and servers.on_down(seen):
            main.cancel()
            return


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
        servers: ServerWatching | None = None,
    ) -> None:
        """Hand each Score to ``accept`` as its sample finishes, until the items run out,
        ``accept`` returns False, or a signal stops the run (its name goes to ``stop``).

        With ``servers``, the run also stops (the samples in flight cancelled, without a
        record) once its watch says no request reaches the judge's servers any more."""
        evaluator = self.evaluator

        async def consume() -> None:
            loop = asyncio.get_running_loop()
            main = asyncio.current_task()
            handled = cancel_on_sigterm(loop, main, stop.request)
            watching = asyncio.ensure_future(_watch(servers, main)) if servers and main else None
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
