"""Debian's headless Chromium as the report's browser test and benchmark start it.

The flags keep it from reaching for the network on start (the machine's network is closed)
and from needing a sandbox or /dev/shm inside containers.
"""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
