"""Shared helpers of the service tests: images, a judge against the fake OpenAI server, the
app under a test client, and the app on a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import base64
import io
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the serve extra (fastapi, uvicorn) is not installed")

from fastapi import FastAPI
from fastapi.testclient import TestClient
from PIL import Image

import cigeval
from cigeval.serve.app import create_app
from cigeval.serve.settings import ServeConfig


def png_bytes(color: tuple[int, int, int] = (200, 20, 20), size: int = 32) -> bytes:
    """A small PNG file."""
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buffer, format="PNG")
    return buffer.getvalue()


def b64(data: bytes) -> str:
    """Base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


#: Bytes that no image reader accepts.
CORRUPT = b"\x89PNG\r\n\x1a\n this is not really a png"


def png_claiming(width: int, height: int) -> bytes:
    """A small PNG file whose header claims ``width`` x ``height`` pixels (a decompression
    bomb's header, with next to no data behind it)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def t2i_item(index: int, *, image: bytes | None = None, group: str | None = None) -> dict[str, Any]:
    """A T2I item of ``/v1/score``."""
    item: dict[str, Any] = {
        "id": f"s{index}",
        "prompt": "a red square",
        "images": {"output": b64(image if image is not None else png_bytes())},
    }
    if group is not None:
        item["group"] = group
    return item


def make_evaluator(base_url: str, concurrency: int = 64, **overrides: Any) -> cigeval.Evaluator:
    """A judge at ``base_url`` with no tools, no cache and no preflight of its own (the app
    runs it)."""
    return cigeval.Evaluator(
        f"openai:fake-model@{base_url}",
        run_config=cigeval.RunConfig(
            use_cache=False, concurrency=concurrency, preflight=False, max_retries=0
        ),
        **{"tools": (), **overrides},
    )


@contextmanager
def served_client(
    base_url: str, settings: ServeConfig | None = None, *, warm: bool = False, **overrides: Any
) -> Iterator[TestClient]:
    """A test client of the app judging with the fake server at ``base_url`` (without the
    warm-up unless ``warm``: it would take the first scripted reply)."""
    settings = (settings or ServeConfig()).model_copy(update={"warmup": warm})
    app = create_app(make_evaluator(base_url, settings.concurrency, **overrides), settings)
    with TestClient(app) as client:
        yield client


@contextmanager
def running_server(app: FastAPI) -> Iterator[str]:
    """``app`` on a real uvicorn server on 127.0.0.1 (a free port); yields its URL."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
