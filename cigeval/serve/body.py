"""Reading a request's body without holding up the server.

The body arrives in chunks on the event loop (never more than ``limit`` bytes: a 413 as soon
as it is known to pass); everything that costs CPU in proportion to its size (joining the
chunks, unpickling, JSON parsing, base64, image headers, files under ``--image-root``) runs
in a worker thread through :func:`cigeval._off_loop.off_loop`, so ``/health`` and the other
requests are answered meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._caller import in_callers_words

if TYPE_CHECKING:
    from starlette.requests import Request


class Refused(Exception):
    """The whole request is refused: an HTTP status, a plain-text reason, extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def body_too_large(limit: int) -> Refused:
    """The 413 of a body over ``limit`` bytes (no Retry-After: sending it again never helps)."""
    option = in_callers_words("--max-body-bytes", "max_body_bytes")
    return Refused(413, f"request body over the server's limit of {limit} bytes ({option})")


async def read_chunks(request: Request, limit: int) -> list[bytes]:
    """The body's chunks as they arrived (joined later, off the loop); a 413 as soon as the
    declared or received size passes ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise body_too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise body_too_large(limit)
        if chunk:
            chunks.append(chunk)
    return chunks


def joined(chunks: list[bytes]) -> bytes:
    """The body's bytes (one chunk is returned as it is)."""
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
