"""The Backend protocol every model provider implements, and its optional extras."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cigeval.messages import ModelRequest, ModelResponse


@runtime_checkable
class Backend(Protocol):
    """Something that answers chat requests with images.

    ``identity`` names the model (provider and model name, not the URL or the key) and is
    part of every cache key, so a cached answer is never another model's.

    Two optional members are used when a backend has them (see :func:`backend_endpoint` and
    :class:`Preflight`): ``endpoint``, the server set answering (part of the cache key and of
    every record), and ``async preflight()``, a quick check run before the first sample.
    """

    @property
    def identity(self) -> str:
        """Stable name of the model behind this backend, e.g. ``openai:gpt-4o-2024-05-13``."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request. Raise :class:`cigeval.errors.BackendError` on final failure."""
        ...


@runtime_checkable
class Preflight(Protocol):
    """A backend (or tool) that can check, before a run, that it will be able to answer.

    ``preflight`` raises :class:`cigeval.errors.PreflightError` naming the fix.
    """

    async def preflight(self) -> None:
        """Check the backend can answer (server reachable, weights loadable, name served)."""
        ...


def backend_endpoint(backend: object) -> str | None:
    """The server set a backend talks to, without credentials, or None.

    ``OpenAIBackend`` reports its URLs (replicas of one spec joined by commas); in-process
    models and backends without an ``endpoint`` attribute have none. Two servers under the
    same model name thus never share cache entries.
    """
    endpoint = getattr(backend, "endpoint", None)
    return endpoint if isinstance(endpoint, str) and endpoint else None
