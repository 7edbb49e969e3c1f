"""The provider calls of the batch path: upload a file, create a batch, poll it, download.

Uses the openai SDK's ``files`` and ``batches`` resources, so any server implementing those
endpoints works (OpenAI; vLLM's and LiteLLM's batch front-ends). Each call is retried on
connection failures, timeouts, 408/409/429 and 5xx by the backend's call policy (the
failures read and the waits as :mod:`cigeval.backends._retrying` reads and waits them);
other errors fail at once. The API key never appears in a message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from cigeval._caller import in_callers_words
from cigeval.backends._retrying import PREFLIGHT_TIMEOUT_S, error_message, sdk_failure
from cigeval.errors import BackendError, PreflightError

if TYPE_CHECKING:
    from openai.types import Batch

    from cigeval.backends.openai_backend import OpenAIBackend

T = TypeVar("T")


class BatchClient:
    """Files and batches of the first server of an :class:`OpenAIBackend`."""

    def __init__(self, backend: OpenAIBackend) -> None:
        self.backend = backend

    @property
    def endpoint(self) -> str:
        """The server holding the batches (the backend's first URL, without credentials)."""
        return self.backend.public_endpoint(self.backend.urls[0])

    async def upload(self, name: str, data: bytes) -> str:
        """Upload a batch input file; its file id."""
        client = self.backend.sdk_client()
        uploaded = await self._call(
            "upload the batch input file",
            lambda: client.files.create(file=(name, data, "application/jsonl"), purpose="batch"),
        )
        return str(uploaded.id)

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> Batch:
        """Create a batch of chat completions from an uploaded file."""
        client = self.backend.sdk_client()
        return await self._call(
            "create the batch",
            lambda: client.batches.create(
                input_file_id=input_file_id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata=metadata,
            ),
        )

    async def retrieve(self, batch_id: str) -> Batch:
        """The batch's current state."""
        client = self.backend.sdk_client()
        return await self._call(
            f"check batch {batch_id}", lambda: client.batches.retrieve(batch_id)
        )

    async def download(self, file_id: str) -> bytes:
        """The content of an output or error file."""
        client = self.backend.sdk_client()
        content = await self._call(
            f"download file {file_id}", lambda: client.files.content(file_id)
        )
        return bytes(content.content)

    async def preflight(self) -> None:
        """Check the server serves the files and batches endpoints ``--batch`` needs.

        One ``GET`` of each list (``/files``, ``/batches``, one item), no retry. A route the
        server does not have (HTTP 404, 405, 501) or cannot serve (5xx: e.g. a LiteLLM proxy
        without its files settings) is a :class:`PreflightError` naming the endpoint; a
        refused key names the key. A 429 proves the route exists and passes.
        """
        import openai

        client = self.backend.sdk_client().with_options(
            max_retries=0, timeout=min(self.backend.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        )
        checks = (("files", client.files.list), ("batches", client.batches.list))
        missing: list[str] = []
        for route, list_first in checks:
            where = f"GET {self.endpoint}/{route}"
            try:
                await list_first(limit=1)
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status in (401, 403):
                    raise PreflightError(
                        self.backend.redact(
                            f"{where} refused the API key (HTTP {status}: {error_message(exc)}); "
                            "set OPENAI_API_KEY to a key it accepts"
                        )
                    ) from None
                if status != 429:
                    missing.append(f"{where} answered HTTP {status} ({error_message(exc)})")
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                missing.append(f"{where} failed ({type(exc).__name__}: {exc})")
        if missing:
            batch = in_callers_words("--batch", "RunConfig(batch=True)")
            leave_out = in_callers_words("Leave out --batch", "Leave batch off")
            skip = in_callers_words("--no-preflight", "preflight=False")
            raise PreflightError(
                self.backend.redact(
                    f"{batch} needs the Batch API's files and batches endpoints: "
                    f"{'; '.join(missing)}. {leave_out} to ask the server directly, or "
                    f"point at a server with a Batch API ({skip} skips this check)"
                )
            )

    async def _call(self, what: str, send: Callable[[], Awaitable[T]]) -> T:
        import openai

        backend = self.backend
        policy = backend.policy
        attempts = 0
        while True:
            attempts += 1
            try:
                return await send()
            except Exception as exc:
                failure = sdk_failure(exc, openai)
                if failure is None:
                    raise
            if not failure.retryable or attempts > policy.max_retries:
                tries = "attempt" if attempts == 1 else "attempts"
                raise BackendError(
                    backend.redact(
                        f"{backend.identity} at {self.endpoint}: could not {what} after "
                        f"{attempts} {tries}: {failure.detail}"
                    )
                )
            await asyncio.sleep(policy.delay(attempts, failure.retry_after))
