"""A standalone OpenAI-compatible chat server for the benchmarks, with latency and faults.

Runs in its own process (so the server's work does not compete with the client for the GIL)
and answers cigeval's planning and judging prompts with :func:`cigeval.testing.rule_judge`.
``GET /stats`` returns the request and fault counts.

    python benchmarks/fake_server.py --latency 0.25 --fault-rate 0.1   # prints the base URL

Unlike a bare ``ThreadingHTTPServer`` it keeps a deep listen backlog (the default of 5 drops
connection attempts when 128 clients connect at once, which costs them a 1 s SYN retry).
``--light`` cuts the base64 image data out of each request body before parsing it (the
replies only depend on the text), so the server spends almost no CPU on megabyte bodies.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cigeval.testing import rule_judge  # noqa: E402

FAULTS = ("429", "500", "garbage", "drop")


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True


def without_image_data(body: bytes) -> bytes:
    """``body`` with the base64 payload of every data URI removed (still valid JSON)."""
    pieces = []
    start = 0
    while (at := body.find(b";base64,", start)) != -1:
        end = body.find(b'"', at)
        if end == -1:
            break
        pieces.append(body[start : at + 8])
        start = end
    pieces.append(body[start:])
    return b"".join(pieces)


def serve(latency_s: float, fault_rate: float, seed: int, light: bool = False) -> _Server:
    """Start serving on a free port of 127.0.0.1 in a background thread. ``light``: parse
    request bodies without their image data (see :func:`without_image_data`)."""
    reply = rule_judge()
    rng = random.Random(seed)
    lock = threading.Lock()
    stats = {"requests": 0, "faults": 0, "max_concurrent": 0}
    active = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            with lock:
                self._send(200, json.dumps(stats).encode())

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.loads(without_image_data(raw) if light else raw)
            with lock:
                stats["requests"] += 1
                fault = rng.choice(FAULTS) if rng.random() < fault_rate else None
                stats["faults"] += fault is not None
                active[0] += 1
                stats["max_concurrent"] = max(stats["max_concurrent"], active[0])
            try:
                text = reply(body) if fault is None else ""
                time.sleep(latency_s)
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                elif fault == "garbage":
                    self._send(200, b"<html>bad gateway")
                elif fault is not None:
                    error = {"error": {"message": "injected", "code": fault}}
                    self._send(int(fault), json.dumps(error).encode(), {"Retry-After": "0.05"})
                else:
                    completion = {
                        "id": "chatcmpl-bench",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": "bench-model",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": 100,
                            "completion_tokens": 20,
                            "total_tokens": 120,
                        },
                    }
                    self._send(200, json.dumps(completion).encode())
            finally:
                with lock:
                    active[0] -= 1

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server


class ServerProcess:
    """The server in a child process: ``with ServerProcess(0.25) as url: ...``."""

    def __init__(
        self, latency_s: float, fault_rate: float = 0.0, seed: int = 0, light: bool = False
    ) -> None:
        self.args = [
            *(["--light"] if light else []),
            "--latency",
            str(latency_s),
            "--fault-rate",
            str(fault_rate),
            "--seed",
            str(seed),
        ]
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> ServerProcess:
        self.process = subprocess.Popen(
            [sys.executable, __file__, *self.args], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        return self

    def stats(self) -> dict[str, int]:
        """Requests, faults and the most concurrent requests seen so far."""
        import urllib.request

        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/stats") as response:
            return json.loads(response.read())  # type: ignore[no-any-return]

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.25, help="seconds per answer")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of failed requests")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--light", action="store_true", help="parse bodies without image data")
    args = parser.parse_args()
    server = serve(args.latency, args.fault_rate, args.seed, args.light)
    host, port = server.server_address[:2]
    print(f"http://{host}:{port}/v1", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()


if __name__ == "__main__":
    main()
