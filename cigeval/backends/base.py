"""The Backend protocol every model provider implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cigeval.messages import ModelRequest, ModelResponse


@runtime_checkable
class Backend(Protocol):
    """Something that answers chat requests with images.

    ``identity`` names the model (provider and model name, not the URL or the key) and is
    part of every cache key, so a cached answer is never another model's.
    """

    @property
    def identity(self) -> str:
        """Stable name of the model behind this backend, e.g. ``openai:gpt-4o-2024-05-13``."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request. Raise :class:`cigeval.errors.BackendError` on final failure."""
        ...
