"""Serving a test double on 127.0.0.1 in a daemon thread (the fake OpenAI and Anthropic
servers share it)."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class _Server(ThreadingHTTPServer):
    # the default backlog (5) drops connections when a test opens dozens at once
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hung up (a call cancelled when its run stopped) is no fault of the
        # server's: no traceback on the test's stderr
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LocalHTTPService:
    """A mix-in: ``start`` binds 127.0.0.1 and routes POST and GET to the subclass's ``_post``
    and ``_get``; ``stop`` (or leaving ``with``) closes the socket. The subclass holds
    ``_httpd``, None until started."""

    _httpd: ThreadingHTTPServer | None

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer ``body`` as JSON with ``status`` (and ``headers``)."""
        payload = json.dumps(body).encode()
        LocalHTTPService._send_raw(handler, status, payload, "application/json", headers)

    @staticmethod
    def _send_raw(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer ``payload`` as it is, with its Content-Length."""
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)

    def _serve(self, port: int = 0) -> None:
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                service._post(self)

            def do_GET(self) -> None:
                service._get(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _Server(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def start(self) -> Self:
        """Bind a free port and serve in a daemon thread."""
        self._serve()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
