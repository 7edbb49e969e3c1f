"""Running ``cigeval evaluate`` against a test server, shared by the CLI tests."""

from __future__ import annotations

from pathlib import Path

from cigeval.cli import main
from tests.openai_server import FakeOpenAIServer


def evaluate_cli(
    server: FakeOpenAIServer,
    samples: Path,
    out: Path,
    *extra: str,
    model: str = "openai:judge-model",
) -> int:
    """``cigeval evaluate SAMPLES --model MODEL --base-url SERVER --out OUT --quiet EXTRA...``."""
    argv = ["evaluate", str(samples), "--model", model, "--base-url", server.base_url]
    return main([*argv, "--out", str(out), "--quiet", *extra])
