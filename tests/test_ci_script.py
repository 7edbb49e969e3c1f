"""scripts/test.sh (what .ci/run runs) installs everything the tests use, which the main job
(scripts/main.sh) does not, and ends with the main suite's pytest summary, not with another
run's third-party warnings."""

from __future__ import annotations

import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "test.sh"


def _commands(script: Path = SCRIPT) -> list[str]:
    """The script's commands, continuation lines joined, comments and blank lines left out."""
    text = script.read_text(encoding="utf-8").replace("\\\n", " ")
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


def test_ci_installs_every_extra_and_the_test_environments_before_the_checks() -> None:
    commands = _commands()
    setup = commands.index("bash scripts/setup.sh --all")
    assert commands.index("bash scripts/setup_test.sh") > setup
    assert commands.index("ruff check .") > commands.index("bash scripts/setup_test.sh")
    assert "bash scripts/test.sh" in _commands(ROOT / ".ci" / "run")


def test_the_main_job_leaves_ci_s_environments_and_chromium_to_ci() -> None:
    main = "\n".join(_commands(ROOT / "scripts" / "main.sh"))
    assert "setup_test.sh" not in main and "--all" not in main
    setup = "\n".join(_commands(ROOT / "scripts" / "setup.sh"))
    for only_for_tests in (".venv-litellm", ".venv-fakellm", "chromium"):
        assert only_for_tests not in setup and only_for_tests not in main
