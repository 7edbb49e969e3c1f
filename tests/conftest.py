"""Shared test setup: offline Hugging Face hub, and no network beyond this machine."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from cigeval.testing.openai_server import FakeOpenAIServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_real_connect = socket.socket.connect


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths
    host = address[0]
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _is_local(address):
        raise OSError(f"tests must not reach the network (tried {address!r})")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection to a non-loopback address fails at once, so no test calls a real API."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    yield


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test gets its own response cache, never the user's (tests may set their own)."""
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def warnings_said_anew() -> None:
    """Each test starts with no warning said yet (each is said once per process)."""
    from cigeval._warn_once import forget_warnings

    forget_warnings()


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started :class:`FakeOpenAIServer` replying "ok"; set ``.replies`` to script it."""
    with FakeOpenAIServer() as server:
        yield server
