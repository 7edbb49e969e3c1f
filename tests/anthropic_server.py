"""A small server speaking the Anthropic messages API for tests, on 127.0.0.1 in a thread.

It answers ``POST /v1/messages`` with scripted replies and records every request, so a test
can assert what the Anthropic SDK sent (system text apart, image blocks in base64). The
standard library is enough: CI needs nothing beyond the ``anthropic`` SDK to cover the
``anthropic:`` path (``fakellm``, a third-party server, is used too when installed).

``GET /v1/models/<id>`` answers 200 for the ids in ``known_models``; with ``known_models``
None the route is absent (404), as on servers that only serve messages. ``required_key``
makes every request without that ``x-api-key`` an HTTP 401. ``fail(index, kind)`` makes the
request number ``index`` answer an HTTP error (``"429"``, ``"500"``, ``"529"``, ``"400"``,
``"401"``, ``"404"``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cigeval.testing.local_http import LocalHTTPService

#: A reply function gets the request as a chat body (``{"messages": [...]}``, the system
#: text first as a system message) and returns the reply text.
ReplyFunction = Callable[[dict[str, Any]], str]


def key_of(headers: dict[str, str]) -> str | None:
    """The API key of a request: ``x-api-key``, else an ``Authorization: Bearer`` token."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "x-api-key" in lowered:
        return lowered["x-api-key"]
    bearer = lowered.get("authorization", "")
    return bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None


@dataclass
class AnthropicRequest:
    """One messages-API request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    def header(self, name: str) -> str | None:
        """A request header, looked up case-insensitively."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)

    @property
    def key(self) -> str | None:
        """The API key sent: ``x-api-key``, or the bearer token (the SDK's 2.x way)."""
        return key_of(self.headers)

    def chat_view(self) -> dict[str, Any]:
        """The request as a chat body: the system text as the first message."""
        messages = list(self.body.get("messages", []))
        if self.body.get("system"):
            messages.insert(0, {"role": "system", "content": self.body["system"]})
        return {"messages": messages}

    def blocks(self, kind: str) -> list[dict[str, Any]]:
        """Every content block of this type (``text``, ``image``), in order."""
        return [
            block
            for message in self.body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == kind
        ]


@dataclass
class FakeAnthropicServer(LocalHTTPService):
    """An Anthropic messages endpoint with scripted replies (see the module docstring).

    ``replies`` is a list of texts served in order (the last one repeats) or a function of
    the request's chat view. ``model`` is the served model reported in every reply.
    """

    replies: list[str] | ReplyFunction = field(default_factory=lambda: ["ok"])
    model: str = "claude-fake-20250101"
    stop_reason: str = "end_turn"
    usage: tuple[int, int] = (13, 5)
    known_models: list[str] | None = None
    required_key: str | None = None
    requests: list[AnthropicRequest] = field(default_factory=list, init=False)
    model_lookups: list[str] = field(default_factory=list, init=False)
    _faults: dict[int, str] = field(default_factory=dict, init=False, repr=False)
    _served: int = field(default=0, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _httpd: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)

    def fail(self, index: int, kind: str) -> None:
        """Make the request number ``index`` (0-based) answer HTTP ``kind``."""
        self._faults[index] = kind

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the form the Anthropic SDK takes."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _refused(self, handler: BaseHTTPRequestHandler) -> bool:
        if self.required_key is None or key_of(dict(handler.headers.items())) == self.required_key:
            return False
        self._error(handler, 401, "authentication_error", "invalid x-api-key")
        return True

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?")[0]
        if self.known_models is None or not path.startswith("/v1/models/"):
            self._error(handler, 404, "not_found_error", f"no route {path}")
            return
        if self._refused(handler):
            return
        name = path.removeprefix("/v1/models/")
        with self._lock:
            self.model_lookups.append(name)
        if name not in self.known_models:
            self._error(handler, 404, "not_found_error", f"model: {name}")
            return
        self._send(handler, 200, {"type": "model", "id": name, "display_name": name})

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        path = handler.path.split("?")[0]
        request = AnthropicRequest(path, dict(handler.headers.items()), body)
        with self._lock:
            index = len(self.requests)
            self.requests.append(request)
            fault = self._faults.get(index)
        if path != "/v1/messages":
            self._error(handler, 404, "not_found_error", f"no route {path}")
        elif self._refused(handler):
            return
        elif fault is not None:
            headers = {"retry-after": "0"} if fault == "429" else {}
            self._error(handler, int(fault), "fault", f"injected {fault}", headers)
        elif self.known_models is not None and body.get("model") not in self.known_models:
            self._error(handler, 404, "not_found_error", f"model: {body.get('model')}")
        else:
            text = self._reply(request)
            prompt, completion = self.usage
            self._send(
                handler,
                200,
                {
                    "id": f"msg_{index}",
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": self.stop_reason,
                    "stop_sequence": None,
                    "usage": {"input_tokens": prompt, "output_tokens": completion},
                },
            )

    def _reply(self, request: AnthropicRequest) -> str:
        if callable(self.replies):
            return self.replies(request.chat_view())
        with self._lock:
            reply = self.replies[min(self._served, len(self.replies) - 1)]
            self._served += 1
            return reply

    def _error(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        kind: str,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        body = {"type": "error", "error": {"type": kind, "message": message}}
        self._send(handler, status, body, headers)


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    """A started :class:`FakeAnthropicServer` replying "ok"; set ``.replies`` to script it."""
    with FakeAnthropicServer() as server:
        yield server
