"""Gathering the items of concurrent callers into one batch.

verl's reward loops call ``compute_score`` once per sample, many at once (a coroutine each,
or a worker thread each); one round trip per sample would cost 64 round trips for 64
images. A :class:`Batcher` holds what arrives within ``window_s`` (or until ``max_items``
are waiting) and sends it as one batch; each caller gets its own item's outcome back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")


class Batcher(Generic[Item, Outcome]):
    """Sends items submitted from any thread or event loop in batches through ``send``
    (a blocking function: items in, one outcome per item out, in order)."""

    def __init__(
        self,
        send: Callable[[list[Item]], Sequence[Outcome]],
        *,
        window_s: float = 0.05,
        max_items: int = 256,
    ) -> None:
        self.send = send
        self.window_s = window_s
        self.max_items = max_items
        self._lock = threading.Lock()
        self._pending: list[tuple[Item, Future[Outcome]]] = []
        self._timer: threading.Timer | None = None
        #: Batches sent so far (for tests and logs).
        self.batches_sent = 0

    def submit(self, item: Item) -> Future[Outcome]:
        """A future of ``item``'s outcome (``.result()`` from a thread;
        ``await asyncio.wrap_future(...)`` from a coroutine)."""
        future: Future[Outcome] = Future()
        with self._lock:
            self._pending.append((item, future))
            if len(self._pending) >= self.max_items:
                batch = self._take()
            else:
                batch = None
                if self._timer is None:
                    self._timer = threading.Timer(self.window_s, self._flush)
                    self._timer.daemon = True
                    self._timer.start()
        if batch:
            threading.Thread(target=self._send, args=(batch,), daemon=True).start()
        return future

    def _take(self) -> list[tuple[Item, Future[Outcome]]]:
        batch, self._pending = self._pending, []
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return batch

    def _flush(self) -> None:
        with self._lock:
            batch = self._take()
        if batch:
            self._send(batch)

    def _send(self, batch: list[tuple[Item, Future[Outcome]]]) -> None:
        self.batches_sent += 1
        try:
            outcomes = list(self.send([item for item, _ in batch]))
            if len(outcomes) != len(batch):
                raise RuntimeError(f"{len(outcomes)} outcomes for a batch of {len(batch)}")
        except BaseException as exc:
            for _, future in batch:
                future.set_exception(exc)
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            future.set_result(outcome)
