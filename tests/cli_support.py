"""Running ``cigeval evaluate`` against a test server, shared by the CLI tests."""

from __future__ import annotations

from pathlib import Path

from cigeval.cli import main
from cigeval.testing.openai_server import FakeOpenAIServer


def evaluate_cli(
    server: FakeOpenAIServer,
    samples: Path,
    out: Path,
    *extra: str,
    model: str = "openai:judge-model",
    preflight: bool = False,
) -> int:
    """``cigeval evaluate SAMPLES --model MODEL --base-url SERVER --out OUT --quiet EXTRA...``.

    ``--no-preflight`` is added unless ``preflight``: the default tools include Grounding,
    whose weights are not on this machine, and the preflight has tests of its own.
    """
    argv = ["evaluate", str(samples), "--model", model, "--base-url", server.base_url]
    checks = [] if preflight else ["--no-preflight"]
    return main([*argv, "--out", str(out), "--quiet", *checks, *extra])
