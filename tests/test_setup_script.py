"""scripts/setup.sh installs the core alone unless extras are named (``--all``: what CI
tests), installs torch only for an extra that needs it, and skips pip when nothing new is
asked (so a second scripts/main.sh reaches its first table within seconds). Run in a copy
with a stand-in python that records its calls: nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if shutil.which("bash") is None or shutil.which("sha256sum") is None:
    pytest.skip("bash and sha256sum are needed", allow_module_level=True)

RECORDING_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../../calls.log"
"""


def _checkout(tmp_path: Path) -> Path:
    """scripts/setup.sh and pyproject.toml, with a .venv whose python only records calls."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(RECORDING_PYTHON)
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    return tmp_path


def _setup(checkout: Path, *args: str) -> list[str]:
    """Run setup.sh with ``args``; the stand-in python's calls it made."""
    log = checkout / "calls.log"
    log.unlink(missing_ok=True)
    subprocess.run(["bash", "scripts/setup.sh", *args], cwd=checkout, check=True, timeout=60)
    return log.read_text().splitlines() if log.exists() else []


def _installs(calls: list[str]) -> list[str]:
    """The pip install calls, without pip's own upgrade."""
    return [c for c in calls if "pip install" in c and "--upgrade pip" not in c]


def test_no_arguments_install_the_core_alone_without_torch(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    assert _installs(_setup(checkout)) == ["-m pip install --quiet -e ."]
    assert _setup(checkout) == []  # nothing changed, nothing new asked: pip is skipped
    assert not (checkout / ".venv-litellm").exists() and not (checkout / ".venv-fakellm").exists()


def test_an_extra_that_needs_torch_installs_it_first_and_keeps_what_was_there(
    tmp_path: Path,
) -> None:
    checkout = _checkout(tmp_path)
    _setup(checkout, "anthropic")
    installs = _installs(_setup(checkout, "grounding"))
    assert installs == [
        "-m pip install --quiet torch==2.13.0",
        "-m pip install --quiet -e .[anthropic,grounding]",
    ]
    assert _setup(checkout, "grounding") == [] and _setup(checkout) == []


def test_all_installs_every_extra_ci_uses_and_then_covers_the_others(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    installs = _installs(_setup(checkout, "--all"))
    assert installs[0] == "-m pip install --quiet torch==2.13.0"
    extras = installs[1].split("[", 1)[1].rstrip("]").split(",")
    assert {"dev", "grounding", "hf", "inspect", "mcp", "train", "ray", "ray-serve"} <= set(extras)
    assert "calibrate" in extras  # scikit-learn, for cigeval calibrate's tests
    assert "litellm" not in extras  # its pins clash: an environment of its own
    assert _setup(checkout) == [] and _setup(checkout, "hf", "grounding") == []


def test_a_changed_pyproject_installs_again(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    _setup(checkout, "grounding")
    with (checkout / "pyproject.toml").open("a") as handle:
        handle.write("\n# a change\n")
    # what was installed before is not remembered across a change: the extras asked now
    assert _installs(_setup(checkout)) == ["-m pip install --quiet -e ."]


def test_the_litellm_extra_is_refused_here(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    done = subprocess.run(
        ["bash", "scripts/setup.sh", "litellm"], cwd=checkout, capture_output=True, text=True
    )
    assert done.returncode == 2 and "environment of its own" in done.stderr
    assert not (checkout / "calls.log").exists()
