"""The test suite itself cannot reach a real model API."""

from __future__ import annotations

import socket

import pytest


def test_outside_connections_are_refused():
    with socket.socket() as sock, pytest.raises(OSError, match="must not reach the network"):
        sock.connect(("203.0.113.7", 443))
