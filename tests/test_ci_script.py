"""scripts/test.sh (what .ci/run runs) ends with the main suite's pytest summary, not with
another run's third-party warnings."""

from __future__ import annotations

import shlex
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "test.sh"


def _commands() -> list[str]:
    """The script's commands, continuation lines joined, comments and blank lines left out."""
    text = SCRIPT.read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_main_pytest_run_is_the_last_command() -> None:
    commands = _commands()
    assert shlex.split(commands[-1])[:3] == ["python", "-m", "pytest"]
    pytest_runs = [c for c in commands if "-m pytest" in c]
    assert len(pytest_runs) == 2  # the LiteLLM run, then the main one


def test_the_litellm_run_hides_its_warnings() -> None:
    (litellm,) = [c for c in _commands() if ".venv-litellm/bin/python -m pytest" in c]
    assert "-p no:warnings" in litellm
