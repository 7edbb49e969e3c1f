"""A cap on the bytes of a judge's reply, read by the SDKs' HTTP clients (httpx or httpx2).

A server that streams an endless body would otherwise grow the process's memory until it is
killed: the SDKs read a reply whole before they parse it. The clients made here ask for the
reply uncompressed (``Accept-Encoding: identity``: a compressed body could hold any number of
bytes in a few) and check each reply when its headers arrive: one announced larger than the
cap, or compressed all the same, is refused at once; any other is read through a counter that
stops it as soon as it passes the cap. Either way the attempt fails as an unreadable reply
(:class:`ReplyTooLarge`), retried as the call policy says, in memory bounded by the cap.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.backends._retrying import UnreadableReply

#: The request header that asks for an uncompressed reply.
IDENTITY = {"Accept-Encoding": "identity"}


class ReplyTooLarge(UnreadableReply):
    """A reply that holds more bytes than the cap (or is compressed, so could)."""


def http_library(client_class: type) -> Any:
    """The HTTP library (httpx, httpx2) whose AsyncClient ``client_class`` is (the SDKs'
    ``DefaultAsyncHttpxClient`` subclasses it)."""
    base = next(c for c in client_class.__mro__ if c.__name__ == "AsyncClient")
    return sys.modules[base.__module__.split(".")[0]]


def reply_cap_hooks(
    client_class: type, max_bytes: int
) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
    """The ``event_hooks`` of an SDK's HTTP client of class ``client_class`` that cap every
    reply at ``max_bytes`` bytes (see the module)."""
    library = http_library(client_class)

    class CappedStream(library.AsyncByteStream):  # type: ignore[name-defined]
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        async def __aiter__(self) -> AsyncIterator[bytes]:
            read = 0
            async for chunk in self.stream:
                read += len(chunk)
                if read > max_bytes:
                    raise ReplyTooLarge(
                        f"the reply passed {max_bytes} bytes "
                        f"({in_callers_words('--max-reply-bytes', 'max_reply_bytes')}); it was "
                        "cut off there"
                    )
                yield chunk

        async def aclose(self) -> None:
            await self.stream.aclose()

    async def on_response(response: Any) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ReplyTooLarge(
                f"the server compressed its reply (Content-Encoding: {encoding[:40]}) although "
                "asked for it uncompressed: its size cannot be bounded"
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ReplyTooLarge(
                f"the reply announces {int(declared)} bytes, more than {max_bytes} "
                f"({in_callers_words('--max-reply-bytes', 'max_reply_bytes')})"
            )
        response.stream = CappedStream(response.stream)

    return {"response": [on_response]}
