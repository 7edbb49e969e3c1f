"""BatchBackend: an ``openai:`` judge whose calls go through the provider's Batch API."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cigeval._caller import in_callers_words
from cigeval.backends.base import Backend
from cigeval.backends.batch.client import BatchClient
from cigeval.backends.batch.lines import request_line
from cigeval.backends.cache import CachedBackend, ResponseCache, cache_bypassed, cache_key
from cigeval.backends.wrapper import WrappingBackend
from cigeval.errors import ConfigError
from cigeval.messages import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from cigeval.backends.batch.coordinator import BatchCoordinator
    from cigeval.backends.openai_backend import OpenAIBackend


class BatchBackend(WrappingBackend["OpenAIBackend"]):
    """A :class:`Backend` answering through batches of its coordinator.

    The request body is the direct path's (:meth:`OpenAIBackend.payload`) and its
    ``custom_id`` is the answer cache key, so a batched reply is cached, resumed and recorded
    exactly like a direct one. ``cache`` (optional) is read before queuing and receives every
    reply downloaded.
    """

    def __init__(
        self,
        inner: OpenAIBackend,
        coordinator: BatchCoordinator,
        cache: ResponseCache | None = None,
    ) -> None:
        super().__init__(inner)
        self.coordinator = coordinator
        self.cache = cache
        self.client = BatchClient(inner)

    @property
    def model(self) -> str:
        """The wrapped backend's model name."""
        return self.inner.model

    async def preflight(self) -> None:
        """The wrapped backend's check (the server answers and serves the model), then the
        Batch API's: the server has the files and batches endpoints
        (:meth:`BatchClient.preflight`)."""
        await super().preflight()
        await self.client.preflight()

    def key(self, request: ModelRequest) -> str:
        """The cache key of ``request``, also its ``custom_id`` in a batch file."""
        return cache_key(self.inner.identity, request, self.endpoint)

    def forget(self, request: ModelRequest) -> None:
        """Drop an unusable reply from the cache and from the batch record, so a later run
        asks again instead of replaying it."""
        key = self.key(request)
        if self.cache is not None:
            self.cache.delete(key)
        self.coordinator.state.forget([key])

    def save(self, key: str, response: ModelResponse) -> None:
        """Cache a reply read from a batch under its ``custom_id``."""
        if self.cache is not None:
            self.cache.save(key, response)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The cached answer, else the reply from a batch (this waits for the batch)."""
        started = time.perf_counter()
        key = self.key(request)
        refresh = cache_bypassed()
        if self.cache is not None and not refresh:
            hit = self.cache.lookup(key)
            if hit is not None:
                return dataclasses.replace(hit, latency_s=time.perf_counter() - started)
        line = request_line(key, self.inner.payload(request))
        response = await self.coordinator.request(self, key, line, refresh)
        return dataclasses.replace(response, latency_s=time.perf_counter() - started)


def batch_backends(backends: Sequence[Backend], coordinator: BatchCoordinator) -> list[Backend]:
    """``backends`` with every ``openai:`` one (cached or not) answering through batches.

    Others (``hf:``, langchain, your own) are kept as they are. Raises ConfigError when none
    can be batched.
    """
    from cigeval.backends.openai_backend import OpenAIBackend

    wrapped: list[Backend] = []
    for backend in backends:
        inner, cache = backend, None
        if isinstance(backend, CachedBackend):
            inner, cache = backend.inner, backend.cache
        if isinstance(inner, OpenAIBackend) and inner.batch_api:
            wrapped.append(BatchBackend(inner, coordinator, cache))
        else:
            wrapped.append(backend)
    if not any(isinstance(b, BatchBackend) for b in wrapped):
        names = ", ".join(b.identity for b in backends)
        batch = in_callers_words("--batch", "RunConfig(batch=True)")
        raise ConfigError(
            f"{batch} sends the calls of 'openai:' judges through a Batch API; none of the "
            f"judges ({names}) is one"
        )
    return wrapped
