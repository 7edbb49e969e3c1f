"""A test double of the OpenAI files + batches endpoints on 127.0.0.1, beside the chat one.

:class:`FakeBatchServer` is a :class:`FakeOpenAIServer` (so direct chat calls and preflight
work as before) that also serves the batch path::

    POST /v1/files                  multipart upload (purpose=batch) -> {"id": "file-..."}
    POST /v1/batches                {"input_file_id", "endpoint", "completion_window"}
    GET  /v1/batches/{id}           the batch; each check moves it on (see below)
    GET  /v1/files/{id}/content     an output or error file
    GET  /v1/files, /v1/batches     the lists (``list_status`` makes one answer an error)

A batch reports ``in_progress`` on its first ``polls_to_complete`` checks, then runs every
line through the same reply function as the chat route and reports ``completed`` with an
output file (and an error file when some lines fail). ``hold()`` keeps every batch in
progress until ``release()``. ``fail_line(match, status, message)`` makes lines whose request
text contains ``match`` fail (``status`` None: no HTTP status, as for expiry);
``outcome(kind)`` makes the next batch end ``failed`` (nothing run), ``expired`` (half its
lines run) or ``cancelled`` (none run). Everything is recorded in ``batches``.
"""

from __future__ import annotations

import email.parser
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler
from typing import Any, cast

from cigeval.testing import request_text
from cigeval.testing.openai_server import FakeOpenAIServer


@dataclass
class FakeBatch:
    """One batch as the double holds it."""

    id: str
    input_file_id: str
    lines: list[dict[str, Any]]
    status: str = "validating"
    checks: int = 0
    outcome: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def custom_ids(self) -> list[str]:
        """The custom_ids of its lines, in file order."""
        return [line["custom_id"] for line in self.lines]


@dataclass
class FakeBatchServer(FakeOpenAIServer):
    """A chat server plus the files and batches endpoints (see the module docstring)."""

    polls_to_complete: int = 1
    #: HTTP status of ``GET /files`` and ``GET /batches`` by route (200 unless set here), and
    #: how many times each was asked.
    list_status: dict[str, int] = field(default_factory=dict)
    list_requests: dict[str, int] = field(default_factory=dict, init=False)
    batches: list[FakeBatch] = field(default_factory=list, init=False)
    files: dict[str, bytes] = field(default_factory=dict, init=False)
    _line_faults: list[list[Any]] = field(default_factory=list, init=False)
    _outcomes: list[str] = field(default_factory=list, init=False)
    _released: threading.Event = field(default_factory=threading.Event, init=False)
    _ids: Any = field(default_factory=itertools.count, init=False)

    def __post_init__(self) -> None:
        self._released.set()

    def hold(self) -> None:
        """Keep every batch in progress until :meth:`release`."""
        self._released.clear()

    def release(self) -> None:
        """Let held batches finish on their next check."""
        self._released.set()

    def fail_line(
        self,
        match: str,
        status: int | None = 500,
        message: str = "boom",
        times: int | None = None,
    ) -> None:
        """Lines whose request text contains ``match`` fail, the first ``times`` times they
        are run (None: every time)."""
        self._line_faults.append([match, status, message, times])

    def outcome(self, kind: str) -> None:
        """The next batch created ends ``failed``, ``expired`` or ``cancelled``."""
        if kind not in ("failed", "expired", "cancelled"):
            raise ValueError(kind)
        self._outcomes.append(kind)

    def batched_custom_ids(self) -> list[str]:
        """Every custom_id submitted, once per submission."""
        return [c for batch in self.batches for c in batch.custom_ids]

    def start(self) -> FakeBatchServer:
        """Bind a free port and serve in a daemon thread."""
        super().start()
        return self

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.rstrip("/")
        if path.endswith("/files"):
            self._upload(handler)
        elif path.endswith("/batches"):
            self._create(handler)
        else:
            self._handle(handler)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?", 1)[0].rstrip("/")
        if "/batches/" in path:
            self._retrieve(handler, path.rsplit("/", 1)[1])
        elif path.endswith("/content") and "/files/" in path:
            self._content(handler, path.split("/files/", 1)[1].rsplit("/", 1)[0])
        elif path.endswith(("/files", "/batches")):
            self._list(handler, path.rsplit("/", 1)[1])
        else:
            self._list_models(handler)

    def __enter__(self) -> FakeBatchServer:
        return self.start()

    # -- routes ----------------------------------------------------------------------------

    def _upload(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length", 0)))
        head = f"Content-Type: {handler.headers['Content-Type']}\r\n\r\n".encode()
        message = email.parser.BytesParser().parsebytes(head + raw)
        parts = {
            part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in cast("list[Message]", message.get_payload())
        }
        if parts.get("purpose") != b"batch" or not parts.get("file"):
            self._send(handler, 400, {"error": {"message": "expected purpose=batch and a file"}})
            return
        with self._lock:
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = cast(bytes, parts["file"])
        self._send(handler, 200, _file_object(file_id, len(parts["file"])))

    def _create(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers.get("Content-Length", 0))))
        data = self.files.get(body.get("input_file_id", ""))
        if data is None or body.get("endpoint") != "/v1/chat/completions":
            self._send(handler, 400, {"error": {"message": "unknown input file or endpoint"}})
            return
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        with self._lock:
            batch = FakeBatch(f"batch_{next(self._ids)}", body["input_file_id"], lines)
            batch.outcome = self._outcomes.pop(0) if self._outcomes else None
            self.batches.append(batch)
        self._send(handler, 200, self._batch_object(batch))

    def _retrieve(self, handler: BaseHTTPRequestHandler, batch_id: str) -> None:
        batch = next((b for b in self.batches if b.id == batch_id), None)
        if batch is None:
            self._send(handler, 404, {"error": {"message": f"no batch {batch_id}"}})
            return
        with self._lock:
            batch.checks += 1
            if batch.status not in ("completed", "failed", "expired", "cancelled"):
                if batch.checks <= self.polls_to_complete or not self._released.is_set():
                    batch.status = "in_progress"
                else:
                    self._finish(batch)
        self._send(handler, 200, self._batch_object(batch))

    def _list(self, handler: BaseHTTPRequestHandler, route: str) -> None:
        """``GET /files`` or ``GET /batches``: the list (a preflight reads the first page)."""
        with self._lock:
            self.list_requests[route] = self.list_requests.get(route, 0) + 1
        status = self.list_status.get(route, 200)
        if status != 200:
            self._send(handler, status, {"error": {"message": f"{route} not configured"}})
            return
        if route == "files":
            data = [_file_object(i, len(b)) for i, b in self.files.items()]
        else:
            data = [self._batch_object(b) for b in self.batches]
        self._send(handler, 200, {"object": "list", "data": data[:1], "has_more": len(data) > 1})

    def _content(self, handler: BaseHTTPRequestHandler, file_id: str) -> None:
        data = self.files.get(file_id)
        if data is None:
            self._send(handler, 404, {"error": {"message": f"no file {file_id}"}})
            return
        self._send_raw(handler, 200, data, "application/octet-stream")

    # -- running a batch -------------------------------------------------------------------

    def _finish(self, batch: FakeBatch) -> None:
        if batch.outcome == "failed":
            batch.status = "failed"
            batch.errors = [{"code": "invalid_request", "message": "the test made it fail"}]
            return
        run = batch.lines
        if batch.outcome == "expired":
            run = batch.lines[: len(batch.lines) // 2]
        elif batch.outcome == "cancelled":
            run = []
        outputs, errors = [], []
        for line in batch.lines:
            if line not in run:
                code = "batch_expired" if batch.outcome == "expired" else "batch_cancelled"
                errors.append(_error_line(line, None, code, f"not run: the batch {batch.outcome}"))
                continue
            fault = next(
                (
                    f
                    for f in self._line_faults
                    if f[0] in request_text(line["body"]) and (f[3] is None or f[3] > 0)
                ),
                None,
            )
            if fault is not None:
                if fault[3] is not None:
                    fault[3] -= 1
                errors.append(_error_line(line, fault[1], "fault", fault[2]))
                continue
            body = line["body"]
            index = len(self.requests)
            self.requests.append(_recorded(body))
            reply = self.replies(body) if callable(self.replies) else self._next_reply()
            response = {"status_code": 200, "request_id": f"req-{index}"}
            response["body"] = self._completion(reply, index)
            custom_id = line["custom_id"]
            outputs.append({"id": f"br-{index}", "custom_id": custom_id, "response": response})
        batch.status = batch.outcome or "completed"
        if outputs:
            batch.output_file_id = f"file-{next(self._ids)}"
            self.files[batch.output_file_id] = _jsonl(outputs)
        if errors:
            batch.error_file_id = f"file-{next(self._ids)}"
            self.files[batch.error_file_id] = _jsonl(errors)

    def _batch_object(self, batch: FakeBatch) -> dict[str, Any]:
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "input_file_id": batch.input_file_id,
            "status": batch.status,
            "created_at": int(time.time()),
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "request_counts": {"total": len(batch.lines), "completed": 0, "failed": 0},
        }


def _recorded(body: dict[str, Any]) -> Any:
    from cigeval.testing.openai_server import RecordedRequest

    return RecordedRequest("/v1/chat/completions (batch)", {}, body, None, time.monotonic())


def _error_line(
    line: dict[str, Any], status: int | None, code: str, message: str
) -> dict[str, Any]:
    error = {"code": code, "message": message}
    if status is None:
        return {"id": "br-x", "custom_id": line["custom_id"], "response": None, "error": error}
    response = {"status_code": status, "request_id": "req-x", "body": {"error": error}}
    return {"id": "br-x", "custom_id": line["custom_id"], "response": response, "error": None}


def _file_object(file_id: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": "input.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def _jsonl(entries: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)
