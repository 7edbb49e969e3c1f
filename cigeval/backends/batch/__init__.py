"""The provider Batch API path (``--batch``): an agent's calls gathered stage by stage.

:class:`BatchCoordinator` queues the calls of every sample in flight and sends each stage
(all planning calls, then all judge calls, then re-asks and extra rounds) as a few batches
through the OpenAI files + batches endpoints; :class:`BatchBackend` is an ``openai:`` judge
answering through it; :class:`BatchState` records submitted batches so a killed run
resumes polling them. See docs/batch.md. Importing this package does not load the openai
client.
"""

from __future__ import annotations

from cigeval.backends.batch.backend import BatchBackend, batch_backends
from cigeval.backends.batch.client import BatchClient
from cigeval.backends.batch.coordinator import BatchCoordinator
from cigeval.backends.batch.lines import LineFailure, read_result_lines, request_line
from cigeval.backends.batch.state import BatchRecord, BatchState
from cigeval.backends.batch.stats import BatchEntry, BatchStats

__all__ = [
    "BatchBackend",
    "BatchClient",
    "BatchCoordinator",
    "BatchEntry",
    "BatchRecord",
    "BatchState",
    "BatchStats",
    "LineFailure",
    "batch_backends",
    "read_result_lines",
    "request_line",
]
