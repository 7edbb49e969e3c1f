"""Gathers the model calls of many samples into provider batches, stage by stage.

Every judge call of a sample under ``--batch`` waits on a future held here. The queue is
sent as batches (split at the size limits, one model per batch) once the stage is complete:
every sample in flight waits on a reply and no tool is still running in a worker thread.
So the planning calls of all samples go in one flush, their judge calls in the next, re-asks
and extra rounds in later ones. A submitted batch is recorded (:class:`BatchState`) before
it is polled; its replies are cached under their ``custom_id`` (the answer cache key), so a
killed run resumes polling the same batches and a finished one replays from the cache.

Failed lines and batches that fail, expire or are cancelled are submitted again up to
``retries`` times; then each affected request raises :class:`BackendError` with the
provider's message, which makes an error record for exactly the samples that asked it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from cigeval._caller import in_callers_words
from cigeval.backends.batch._executor import CountingExecutor
from cigeval.backends.batch.client import BatchClient
from cigeval.backends.batch.lines import LineFailure, read_result_lines
from cigeval.backends.batch.state import BatchRecord, BatchState
from cigeval.backends.batch.stats import BatchEntry, BatchStats
from cigeval.backends.observers import Observers, current_observers
from cigeval.errors import BackendError, ConfigError
from cigeval.messages import ModelResponse

if TYPE_CHECKING:
    from openai.types import Batch

    from cigeval.config import RunConfig

logger = logging.getLogger("cigeval.backends.batch")


class BatchedBackend(Protocol):
    """What the coordinator needs of a backend whose calls it batches
    (:class:`cigeval.backends.batch.backend.BatchBackend` is one)."""

    @property
    def identity(self) -> str:
        """The model's identity, the batch's model."""
        ...

    @property
    def model(self) -> str:
        """The model name a batch's result lines are read for."""
        ...

    @property
    def client(self) -> BatchClient:
        """The Batch API client that uploads, creates and polls its batches."""
        ...

    def save(self, key: str, response: ModelResponse) -> None:
        """Keep a reply read from a batch under its ``custom_id``."""
        ...


#: How long nothing may happen (no request queued, no thread job ending, no reply handed
#: out) before a complete stage is sent, in seconds: lets the replies of the previous batch
#: and the tools' results finish turning into new requests.
SETTLE_S = 0.05
#: The most the queue's timer may fire late for the event loop to count as idle (seconds):
#: a late timer means ready work (a sample between two steps) was still being run.
MAX_LAG_S = 0.02
#: Without samples to watch (calls made outside an Evaluator), the quiet time that ends a stage.
UNTRACKED_QUIET_S = 1.0
#: When some sample waits on something else (another, non-batched judge), the quiet time
#: after which the queue is sent anyway, so no sample holds the others back for long.
STALLED_QUIET_S = 5.0
#: Batch statuses after which nothing more will change.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


class _Activity:
    """One sample in flight: how many of its calls wait on a batch."""

    __slots__ = ("waiting",)

    def __init__(self) -> None:
        self.waiting = 0


_SAMPLE: ContextVar[_Activity | None] = ContextVar("cigeval_batch_sample", default=None)


@dataclass(eq=False)
class _Item:
    """One distinct request (by custom_id) and everyone waiting for its reply.

    ``counter``: the call observers of the sample that asked first, told of each submission
    of the line (the sample's ``http_attempts``; those who joined an identical request sent
    nothing).
    """

    custom_id: str
    backend: BatchedBackend
    line: bytes
    waiters: list[asyncio.Future[ModelResponse]] = field(default_factory=list)
    attempts: int = 0
    batch_id: str | None = None
    counter: Observers | None = None


class BatchCoordinator:
    """The batch queue, submission, polling and resume of one Evaluator's judges.

    ``poll_s``: seconds between status checks; ``max_requests`` / ``max_bytes``: the
    provider's limits per batch file; ``retries``: resubmissions of a failed request;
    ``state``: where submitted batches are recorded (in memory when its path is None).
    """

    def __init__(
        self,
        *,
        poll_s: float = 30.0,
        max_requests: int = 50_000,
        max_bytes: int = 200_000_000,
        retries: int = 2,
        state: BatchState | None = None,
    ) -> None:
        if poll_s <= 0 or max_requests < 1 or max_bytes < 1 or retries < 0:
            raise ConfigError(
                "batch settings: poll interval > 0, max requests and bytes >= 1, retries >= 0"
            )
        self.poll_s = poll_s
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.retries = retries
        self.state = state or BatchState()
        self.stats = BatchStats()
        self._stage = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: dict[str, _Item] = {}
        self._in_batch: dict[str, _Item] = {}
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._active: set[_Activity] = set()
        self._last_activity = 0.0
        self._wake: asyncio.Event | None = None
        self._executor: CountingExecutor | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._reported: set[str] = set()

    @classmethod
    def from_run_config(cls, config: RunConfig) -> BatchCoordinator:
        """A coordinator with the ``batch_*`` settings of ``config``."""
        return cls(
            poll_s=config.batch_poll_s,
            max_requests=config.batch_max_requests,
            max_bytes=config.batch_max_bytes,
            retries=config.batch_retries,
            state=BatchState(config.batch_state),
        )

    def __repr__(self) -> str:
        return f"BatchCoordinator(poll_s={self.poll_s}, state={self.state!r})"

    @contextlib.contextmanager
    def sample_scope(self) -> Iterator[None]:
        """Marks the running task (and the tasks it starts) as one sample in flight, so a
        stage is sent as soon as every sample in flight waits on a reply."""
        self._bind()
        activity = _Activity()
        token = _SAMPLE.set(activity)
        self._active.add(activity)
        try:
            yield
        finally:
            self._active.discard(activity)
            _SAMPLE.reset(token)
            self._last_activity = time.monotonic()
            self._poke()

    async def request(
        self, backend: BatchedBackend, custom_id: str, line: bytes, refresh: bool = False
    ) -> ModelResponse:
        """The reply to one request line, through a batch (a recorded one when it holds
        ``custom_id``, unless ``refresh`` and that batch was already read)."""
        future = self._enqueue(backend, custom_id, line, refresh)
        activity = _SAMPLE.get()
        if activity is not None:
            activity.waiting += 1
        try:
            return await future
        finally:
            if activity is not None:
                activity.waiting -= 1

    async def aclose(self) -> None:
        """Stop polling in the running loop (submitted batches stay recorded for a rerun)."""
        if self._loop is not asyncio.get_running_loop():
            return
        tasks = [*self._tasks, *self._pollers.values()]
        if self._flusher is not None:
            tasks.append(self._flusher)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop = None

    # -- the queue -------------------------------------------------------------------------

    def _bind(self) -> None:
        """Start the loop-bound parts (the queue's flusher, the counting thread pool)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._loop = loop
        self._queue, self._in_batch, self._pollers, self._active = {}, {}, {}, set()
        self._tasks = set()
        self._wake = asyncio.Event()
        self._executor = CountingExecutor(self._poke_threadsafe)
        loop.set_default_executor(self._executor)
        self._flusher = loop.create_task(self._flush_loop())

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _poke_threadsafe(self) -> None:
        """A thread job ended (called in the worker thread)."""
        self._last_activity = time.monotonic()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._poke)

    def _enqueue(
        self, backend: BatchedBackend, custom_id: str, line: bytes, refresh: bool
    ) -> asyncio.Future[ModelResponse]:
        self._bind()
        assert self._loop is not None
        future: asyncio.Future[ModelResponse] = self._loop.create_future()
        item = self._queue.get(custom_id) or self._in_batch.get(custom_id)
        if item is not None:
            item.waiters.append(future)
            return future
        item = _Item(custom_id, backend, line, [future], counter=current_observers())
        record = self.state.batch_for(custom_id)
        if record is not None and not (refresh and record.downloaded):
            item.attempts, item.batch_id = 1, record.id
            self._in_batch[custom_id] = item
            if record.id not in self._pollers:
                self._start(self._poll(backend, record), record.id)
        else:
            self._queue[custom_id] = item
            self._last_activity = time.monotonic()
        self._poke()
        return future

    async def _flush_loop(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                started = time.monotonic()
                await asyncio.sleep(SETTLE_S)
                now = time.monotonic()
                # A late timer means the loop is busy, unless nothing happened for long.
                idle = now - started - SETTLE_S < MAX_LAG_S
                idle = idle or now - self._last_activity >= STALLED_QUIET_S
                if self._queue and idle and self._stage_complete():
                    self._flush()

    def _stage_complete(self) -> bool:
        """True when the queued requests are all this stage will get."""
        if self._executor is not None and self._executor.busy:
            return False  # a tool (or a parse) is running in a thread: its call is coming
        quiet = time.monotonic() - self._last_activity
        if quiet < SETTLE_S:
            return False
        if not self._active:
            return quiet >= UNTRACKED_QUIET_S
        if all(activity.waiting > 0 for activity in self._active):
            return True
        return quiet >= STALLED_QUIET_S

    def _flush(self) -> None:
        """Send the queue as batches: one model per batch, split at the size limits."""
        self._stage += 1
        items = list(self._queue.values())
        self._queue.clear()
        by_backend: dict[int, list[_Item]] = {}
        for item in items:
            by_backend.setdefault(id(item.backend), []).append(item)
        for group in by_backend.values():
            for chunk in self._split(group):
                for item in chunk:
                    item.attempts += 1
                    if item.counter is not None:
                        item.counter.attempt_sent()
                    item.batch_id = None
                    self._in_batch[item.custom_id] = item
                self._start(self._submit(chunk[0].backend, chunk, self._stage))

    def _split(self, items: list[_Item]) -> Iterator[list[_Item]]:
        chunk: list[_Item] = []
        size = 0
        for item in items:
            if len(item.line) > self.max_bytes:
                self._settle_failure(
                    item,
                    f"the request is {len(item.line):,} bytes, more than a batch file may "
                    f"hold ({self.max_bytes:,}; "
                    f"{in_callers_words('--batch-max-bytes', 'RunConfig.batch_max_bytes')}); "
                    "send smaller images",
                    retryable=False,
                )
                continue
            full = len(chunk) >= self.max_requests or size + len(item.line) > self.max_bytes
            if chunk and full:
                yield chunk
                chunk, size = [], 0
            chunk.append(item)
            size += len(item.line)
        if chunk:
            yield chunk

    def _start(self, work: object, batch_id: str | None = None) -> None:
        assert self._loop is not None
        task: asyncio.Task[None] = self._loop.create_task(work)  # type: ignore[arg-type]
        if batch_id is not None:
            self._pollers[batch_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- one batch -------------------------------------------------------------------------

    async def _submit(self, backend: BatchedBackend, chunk: list[_Item], stage: int) -> None:
        client = backend.client
        data = b"".join(item.line for item in chunk)
        try:
            file_id = await client.upload(f"cigeval-stage-{stage}.jsonl", data)
            batch = await client.create(file_id, {"cigeval_stage": str(stage)})
        except BackendError as exc:
            for item in chunk:
                self._settle_failure(item, str(exc), retryable=False)
            return
        record = BatchRecord(
            id=str(batch.id),
            model=backend.identity,
            endpoint=client.endpoint,
            custom_ids=[item.custom_id for item in chunk],
            stage=stage,
            status=str(batch.status),
            input_file_id=file_id,
            submitted_at=time.time(),
        )
        self._record(record, new=True)
        for item in chunk:
            item.batch_id = record.id
        assert self._loop is not None
        task = asyncio.current_task()
        if task is not None:
            self._pollers[record.id] = task
        await self._poll(backend, record)

    def _record(self, record: BatchRecord, *, new: bool = False) -> None:
        try:
            self.state.add(record) if new else self.state.update(record)
        except OSError as exc:
            logger.warning(
                "could not record batch %s in %s (%s): a run killed before it is read "
                "would submit its requests again",
                record.id,
                self.state.path,
                exc,
            )
        if record.id not in self._reported:
            self._reported.add(record.id)
            self.stats.batches.append(
                BatchEntry(
                    record.id, record.stage, record.model, len(record.custom_ids), record.resumed
                )
            )

    async def _poll(self, backend: BatchedBackend, record: BatchRecord) -> None:
        """Wait for a batch to end, then hand out its replies and failures."""
        client = backend.client
        self._record(record)
        first_read = not record.downloaded
        try:
            while True:
                batch = await client.retrieve(record.id)
                if batch.status != record.status:
                    record.status = str(batch.status)
                    self._record(record)
                if batch.status in TERMINAL:
                    break
                await asyncio.sleep(self.poll_s)
            results: dict[str, ModelResponse | LineFailure] = {}
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    data = await client.download(file_id)
                    results.update(read_result_lines(data, backend.model, client.endpoint))
        except BackendError as exc:
            self._pollers.pop(record.id, None)
            where = f" in {self.state.path}" if self.state.path else ""
            for item in self._items_of(record):
                self._settle_failure(
                    item,
                    f"{exc} (batch {record.id} stays recorded{where}: rerun to collect it)",
                    retryable=False,
                )
            return
        # From here on nothing awaits: a request attaching now finds the batch finished.
        self._pollers.pop(record.id, None)
        self._settle(backend, record, batch, results, first_read)

    def _items_of(self, record: BatchRecord) -> list[_Item]:
        return [item for item in self._in_batch.values() if item.batch_id == record.id]

    def _settle(
        self,
        backend: BatchedBackend,
        record: BatchRecord,
        batch: Batch,
        results: dict[str, ModelResponse | LineFailure],
        first_read: bool,
    ) -> None:
        why = _batch_errors(batch)
        failed: list[str] = []
        for custom_id in list(record.custom_ids):
            result = results.get(custom_id)
            item = self._in_batch.get(custom_id)
            if item is not None and item.batch_id != record.id:
                item = None
            if isinstance(result, ModelResponse):
                self.stats.replies += 1
                if first_read:
                    tokens = self.stats.tokens[result.model]
                    tokens[0] += result.usage.prompt_tokens
                    tokens[1] += result.usage.completion_tokens
                backend.save(custom_id, result)
                if item is not None:
                    self._in_batch.pop(custom_id, None)
                    # As on the direct path, callers who joined an identical request already
                    # asked get the reply marked cached: one call was made for all of them.
                    for index, waiter in enumerate(item.waiters):
                        if not waiter.done():
                            waiter.set_result(replace(result, cached=index > 0))
                continue
            if result is None:
                result = LineFailure(
                    f"batch ended {batch.status} without a reply to this request"
                    + (f" ({why})" if why else ""),
                    retryable=True,
                )
            failed.append(custom_id)
            self.stats.failed_lines += 1
            if item is not None:
                self._settle_failure(item, f"batch {record.id}: {result.message}", result.retryable)
        for item in self._items_of(record):  # attached, yet not listed in the batch
            self._settle_failure(item, f"batch {record.id} does not hold this request", True)
        self._last_activity = time.monotonic()  # the samples handed replies go on
        record.downloaded = True
        if failed:
            self.state.forget(failed)
        self._record(record)

    def _settle_failure(self, item: _Item, message: str, retryable: bool) -> None:
        """Queue ``item`` again when worth it and allowed, else fail its waiters."""
        self._in_batch.pop(item.custom_id, None)
        if all(waiter.done() for waiter in item.waiters):
            return  # nobody waits any more (their samples were cancelled)
        if retryable and item.attempts <= self.retries:
            item.batch_id = None
            self._queue[item.custom_id] = item
            self._last_activity = time.monotonic()
            self.stats.resubmitted += 1
            self._poke()
            return
        self.stats.errors += 1
        tries = f" (submitted {item.attempts} times)" if item.attempts > 1 else ""
        error = BackendError(f"{item.backend.identity} via the Batch API: {message}{tries}")
        for waiter in item.waiters:
            if not waiter.done():
                waiter.set_exception(error)


def _batch_errors(batch: Batch) -> str:
    """The provider's messages about a whole batch (validation errors, ...), short."""
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or []
    messages = []
    for error in data[:3]:
        text = " ".join(str(x) for x in (error.code, error.message) if x)
        if error.line is not None:
            text += f" (line {error.line})"
        messages.append(text)
    return "; ".join(messages)
