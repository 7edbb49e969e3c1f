"""scripts/setup.sh installs on a first run and, with nothing changed, skips pip on the next
(so a second scripts/main.sh reaches its first table within seconds). Run in a copy with a
stand-in python that records its calls: nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if shutil.which("bash") is None or shutil.which("sha256sum") is None:
    pytest.skip("bash and sha256sum are needed", allow_module_level=True)
if not Path("/usr/bin/chromium").is_file():
    pytest.skip("setup.sh would install chromium with apt-get", allow_module_level=True)

RECORDING_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../../calls.log"
"""


def _checkout(tmp_path: Path) -> Path:
    """scripts/setup.sh and pyproject.toml, with a .venv whose python only records calls and
    the side environments present (so the script leaves them alone)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for tool in (".venv/bin/python", ".venv-litellm/bin/python", ".venv-fakellm/bin/fakellm"):
        path = tmp_path / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RECORDING_PYTHON)
        path.chmod(0o755)
    bin_dir = tmp_path / ".venv" / "bin"
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    return tmp_path


def _setup(checkout: Path) -> list[str]:
    """Run setup.sh; the stand-in python's calls it made."""
    log = checkout / "calls.log"
    log.unlink(missing_ok=True)
    subprocess.run(["bash", "scripts/setup.sh"], cwd=checkout, check=True, timeout=60)
    return log.read_text().splitlines() if log.exists() else []


def test_a_second_run_with_nothing_changed_skips_pip(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    first = _setup(checkout)
    assert any("install" in call and ",inspect]" in call for call in first)  # the extras
    assert _setup(checkout) == []


def test_a_changed_pyproject_installs_again(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    _setup(checkout)
    with (checkout / "pyproject.toml").open("a") as handle:
        handle.write("\n# a change\n")
    assert any("install" in call and "-e" in call for call in _setup(checkout))
