"""A small OpenAI-compatible chat server for tests, on 127.0.0.1 in a background thread.

It answers ``POST /v1/chat/completions`` with scripted replies, records every request (body and
headers) and can inject faults into chosen requests. Typical use::

    with FakeOpenAIServer(["first reply", "second reply"]) as server:
        backend = OpenAIBackend("fake-model", base_urls=[server.base_url])
        ...
        assert server.requests[0].texts() == ["..."]

    server.fail(0, "429", retry_after="0.1")   # the first request gets a 429
    server.fail(1, "drop")                     # the second: connection closed, no answer
    server.cut_off(0.25, seed=1)               # about a quarter of replies cut short

``GET /v1/models`` lists ``served_models`` (an empty list by default: a server that does not
say which names it serves, which any name then passes); such requests are counted in
``model_list_requests``, never in ``requests``, so preflight checks do not shift fault indices.
``models_status`` makes that route answer an HTTP error instead (404: a server without it),
``models_fault`` (``"trickle"`` or ``"endless"``, below) a hostile answer.

The test suite's ``openai_server`` fixture (tests/conftest.py) gives one started server.
Faults: ``"429"`` (with Retry-After / retry-after-ms), ``"500"``, ``"400"``, ``"401"``,
``"404"``, ``"garbage"`` (HTTP 200, a body that is not JSON), ``"no_choices"`` (HTTP 200, valid
JSON without choices), ``"drop"`` (the connection closes before any response), and two hostile
ones: ``"trickle"`` (a valid reply announced by its Content-Length, sent one byte a second) and
``"endless"`` (HTTP 200 with a chunked body that never ends: 64 KiB chunks as fast as the client
reads), each until the client hangs up (or ``hostile_for_s`` passes: a client that never stops
reading cannot hold the server's thread for ever). ``cut_off(rate)`` cuts replies short at
random, as a token limit would (``finish_reason: "length"``); such requests are recorded with
the fault ``"cut"`` and the text sent.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cigeval.testing.local_http import LocalHTTPService

FAULTS = (
    "429",
    "500",
    "400",
    "401",
    "404",
    "garbage",
    "no_choices",
    "drop",
    "trickle",
    "endless",
)


#: A reply function gets the parsed request body and returns the reply text.
ReplyFunction = Callable[[dict[str, Any]], str]


@dataclass
class RecordedRequest:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    fault: str | None = None
    received_at: float = 0.0
    #: The reply text sent back (None: no reply, e.g. a fault).
    reply: str | None = None

    def header(self, name: str) -> str | None:
        """A request header, looked up case-insensitively."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of the request body."""
        return list(self.body.get("messages", []))

    def texts(self, role: str | None = None) -> list[str]:
        """Every text sent, in order (plain string contents and text parts)."""
        found = []
        for message in self.messages:
            if role is not None and message.get("role") != role:
                continue
            content = message.get("content")
            if isinstance(content, str):
                found.append(content)
            else:
                found.extend(p["text"] for p in content or [] if p.get("type") == "text")
        return found

    def image_urls(self) -> list[str]:
        """Every ``image_url`` URL sent (data URIs for cigeval), in order."""
        return [
            part["image_url"]["url"]
            for message in self.messages
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]


@dataclass
class _Fault:
    kind: str
    retry_after: str | None = None
    retry_after_ms: str | None = None
    message: str | None = None


@dataclass
class FakeOpenAIServer(LocalHTTPService):
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint with scripted replies.

    ``replies`` is a list of texts served in order (the last one repeats once the list is used
    up) or a function of the request body. ``latency_s`` delays every answer. ``usage`` is
    reported as prompt/completion token counts. Faulted requests are recorded too and do not
    consume a scripted reply. ``max_concurrent`` is the most requests seen in progress at once.
    ``finish_reason`` is reported with every reply (a function of the reply text, or a
    string). ``served_models`` / ``models_status``: see the module docstring. ``port`` 0 picks a
    free port; another one serves a new model at the address of an earlier server.
    """

    replies: list[str] | ReplyFunction = field(default_factory=lambda: ["ok"])
    latency_s: float = 0.0
    model: str = "fake-model"
    usage: tuple[int, int] = (11, 7)
    finish_reason: str | Callable[[str], str] = "stop"
    port: int = 0
    served_models: list[str] = field(default_factory=list)
    models_status: int = 200
    models_fault: str | None = None
    hostile_for_s: float = 120.0
    requests: list[RecordedRequest] = field(default_factory=list, init=False)
    model_list_requests: int = field(default=0, init=False)
    max_concurrent: int = field(default=0, init=False)
    _active: int = field(default=0, init=False, repr=False)
    _faults: dict[int, _Fault] = field(default_factory=dict, init=False, repr=False)
    _cut: tuple[float, random.Random] | None = field(default=None, init=False, repr=False)
    _served: int = field(default=0, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _httpd: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)

    def fail(
        self,
        index: int,
        kind: str,
        *,
        retry_after: str | None = None,
        retry_after_ms: str | None = None,
        message: str | None = None,
    ) -> None:
        """Make the request number ``index`` (0-based, counting every request) fail.

        ``retry_after`` / ``retry_after_ms`` set those headers; ``message`` replaces the error
        message in the body of an HTTP error.
        """
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; choose from {FAULTS}")
        self._faults[index] = _Fault(kind, retry_after, retry_after_ms, message)

    def cut_off(self, rate: float, *, seed: int = 0) -> None:
        """From now on, cut about ``rate`` of the chat replies short, reported with
        ``finish_reason: "length"``. Half of the cuts fall just after the first character of
        a quoted score (``{"score": "10"`` becomes ``{"score": "1``), the rest anywhere."""
        self._cut = (rate, random.Random(seed))

    def _maybe_cut(self, reply: str) -> int | None:
        """Where to cut ``reply``, or None to send it whole."""
        if self._cut is None or len(reply) < 2:
            return None
        rate, rng = self._cut
        with self._lock:
            if rng.random() >= rate:
                return None
            score = reply.find('"score": "')
            if score >= 0 and rng.random() < 0.5:
                return score + len('"score": "') + 1
            return rng.randrange(1, len(reply))

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the form OpenAI clients take."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Bind ``port`` (0: a free one) and serve in a daemon thread."""
        self._serve(self.port)
        return self

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        """Route a POST; subclasses add routes (cigeval/testing/batch_server.py)."""
        self._handle(handler)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        """Route a GET; subclasses add routes."""
        self._list_models(handler)

    def _list_models(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.model_list_requests += 1
        if not handler.path.rstrip("/").endswith("/models"):
            self._send(handler, 404, {"error": {"message": f"no route {handler.path}"}})
        elif self.models_fault is not None:
            self._send_fault(handler, _Fault(self.models_fault))
        elif self.models_status != 200:
            self._send(handler, self.models_status, {"error": {"message": "not here"}})
        else:
            data = [
                {"id": name, "object": "model", "owned_by": "test"} for name in self.served_models
            ]
            self._send(handler, 200, {"object": "list", "data": data})

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", 0))
        raw = handler.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        with self._lock:
            index = len(self.requests)
            fault = self._faults.get(index)
            record = RecordedRequest(
                handler.path,
                dict(handler.headers.items()),
                body,
                fault.kind if fault else None,
                time.monotonic(),
            )
            self.requests.append(record)
            self._active += 1
            self.max_concurrent = max(self.max_concurrent, self._active)
        try:
            reply = None
            if fault is None and handler.path.rstrip("/").endswith("/chat/completions"):
                reply = self.replies(body) if callable(self.replies) else self._next_reply()
            if self.latency_s:
                time.sleep(self.latency_s)
            if fault is not None:
                self._send_fault(handler, fault)
            elif reply is None:
                self._send(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            else:
                cut = self._maybe_cut(reply)
                finish_reason = None
                if cut is not None:
                    reply, finish_reason, record.fault = reply[:cut], "length", "cut"
                record.reply = reply
                self._send(handler, 200, self._completion(reply, index, finish_reason))
        finally:
            with self._lock:
                self._active -= 1

    def _next_reply(self) -> str:
        with self._lock:
            replies = self.replies
            assert isinstance(replies, list)
            if not replies:
                return ""
            reply = replies[min(self._served, len(replies) - 1)]
            self._served += 1
            return reply

    def _completion(
        self, text: str, index: int, finish_reason: str | None = None
    ) -> dict[str, Any]:
        prompt, completion = self.usage
        if finish_reason is None:
            finish_reason = (
                self.finish_reason(text) if callable(self.finish_reason) else self.finish_reason
            )
        return {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _send_fault(self, handler: BaseHTTPRequestHandler, fault: _Fault) -> None:
        if fault.kind in ("trickle", "endless"):
            with contextlib.suppress(OSError):  # the client hung up: what is wanted
                self._send_hostile(handler, fault.kind)
            handler.close_connection = True
            return
        if fault.kind == "drop":
            # Close without a status line: the client sees a dropped connection.
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if fault.kind == "garbage":
            self._send_raw(handler, 200, b"<html>upstream proxy error", "application/json")
            return
        if fault.kind == "no_choices":
            self._send(handler, 200, {"id": "x", "object": "chat.completion", "choices": []})
            return
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = fault.retry_after_ms
        message = fault.message or {"429": "rate limited", "500": "server error"}.get(
            fault.kind, "refused"
        )
        body = {"error": {"message": message, "type": "fault", "code": fault.kind}}
        self._send(handler, int(fault.kind), body, headers)

    def _send_hostile(self, handler: BaseHTTPRequestHandler, kind: str) -> None:
        """A reply that outlives any per-read timeout (``trickle``) or never ends
        (``endless``)."""
        until = time.monotonic() + self.hostile_for_s
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if kind == "trickle":
            body = json.dumps(self._completion("trickled", 0)).encode()
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            for byte in body:
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                if time.monotonic() > until:
                    return
                time.sleep(1.0)
            return
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b" " * 65536
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        handler.wfile.write(b'%x\r\n{"id": "\r\n' % len(b'{"id": "'))
        while time.monotonic() < until:
            handler.wfile.write(framed)
