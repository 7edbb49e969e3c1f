"""The judging part of ``scripts/main.sh`` (``scripts/judge_examples.sh``) against a local
fake judge server: ``CIGEVAL_ARGS`` reach ``cigeval evaluate``, and when Grounding's weights
cannot be loaded offline the script prints one line that, pasted, judges the examples.

The scripts run in a copy of ``scripts/`` and ``examples/`` in a temporary folder, with this
checkout's ``cigeval`` on PATH (``scripts/setup.sh`` is never run here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The script and the examples, copied where their outputs (runs/) may be written."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "judge_examples.sh", tmp_path / "scripts")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def _environment(checkout: Path, **values: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CIGEVAL_MODEL", "CIGEVAL_ARGS", "OPENAI_BASE_URL", "OPENAI_API_KEY")
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env.update(CIGEVAL_CACHE_DIR=str(checkout / "cache"), HF_HUB_OFFLINE="1", **values)
    return env


def _bash(checkout: Path, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=checkout, env=env, capture_output=True, text=True, timeout=600
    )


def _records(checkout: Path) -> list[dict]:
    lines = (checkout / "runs" / "examples.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_cigeval_args_reach_the_evaluate_command_with_their_quotes(checkout: Path) -> None:
    with FakeOpenAIServer(rule_judge()) as server:
        env = _environment(
            checkout,
            CIGEVAL_MODEL="openai:judge",
            OPENAI_BASE_URL=server.base_url,
            CIGEVAL_ARGS="--tools 'Difference,Scene Graph' --limit 2",
        )
        done = _bash(checkout, ["bash", "scripts/judge_examples.sh"], env)
    assert done.returncode == 0, done.stderr
    records = _records(checkout)
    assert len(records) == 2  # --limit 2
    assert all(r["config"]["tools"] == ["Difference", "Scene Graph"] for r in records)
    assert (checkout / "runs" / "examples.html").is_file()


def test_offline_grounding_failure_prints_one_line_that_works_when_pasted(
    checkout: Path,
) -> None:
    with FakeOpenAIServer(rule_judge()) as server:
        env = _environment(checkout, CIGEVAL_MODEL="openai:judge", OPENAI_BASE_URL=server.base_url)
        failed = _bash(checkout, ["bash", "scripts/judge_examples.sh"], env)
        assert failed.returncode == 2
        assert server.requests == []  # stopped at the preflight, nothing judged
        assert "preflight failed" in failed.stderr and "GroundingDINO" in failed.stderr
        line = failed.stderr.strip().splitlines()[-1]
        assert line == (
            f"CIGEVAL_MODEL=openai:judge OPENAI_BASE_URL={server.base_url} "
            "CIGEVAL_ARGS=\"--tools 'Difference,Scene Graph'\" bash scripts/main.sh"
        )
        # pasted as printed (main.sh would set up .venv first, then run this same script)
        pasted = line.replace("scripts/main.sh", "scripts/judge_examples.sh")
        clean = {k: v for k, v in env.items() if k not in ("CIGEVAL_MODEL", "OPENAI_BASE_URL")}
        done = _bash(checkout, ["bash", "-c", pasted], clean)
    assert done.returncode == 0, done.stderr
    records = _records(checkout)
    assert len(records) == 8 and all(r["status"] == "ok" for r in records)
    assert all(r["config"]["tools"] == ["Difference", "Scene Graph"] for r in records)


RECORDER = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$(dirname "$0")/../../calls.log"
"""


@pytest.fixture
def main_checkout(tmp_path: Path) -> Path:
    """scripts/main.sh and judge_examples.sh as they are, with a setup.sh and a ``cigeval``
    that only record their arguments (nothing installed, nothing judged), and a shared
    folder holding the recorded GPT-4o table."""
    checkout = tmp_path / "clone"
    (checkout / "scripts").mkdir(parents=True)
    for script in ("main.sh", "judge_examples.sh"):
        shutil.copy(ROOT / "scripts" / script, checkout / "scripts")
    (checkout / "scripts" / "setup.sh").write_text(
        'echo "setup.sh $*" >> "$(dirname "$0")/../calls.log"\n'
    )
    bin_dir = checkout / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "cigeval").write_text(RECORDER)
    (bin_dir / "cigeval").chmod(0o755)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    scores = tmp_path / "shared" / "data" / "viescore_outputs" / "scores"
    scores.mkdir(parents=True)
    (scores / "gpt4o_0shot.tsv").write_text("")
    return checkout


def _main(checkout: Path, **values: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run main.sh with ``values`` in its environment; what it printed and the calls made."""
    env = _environment(checkout, **values)
    done = _bash(checkout, ["bash", "scripts/main.sh"], env)
    calls = (checkout / "calls.log").read_text().splitlines()
    return done, calls


def test_main_installs_the_core_alone_for_its_tables(main_checkout: Path) -> None:
    done, calls = _main(main_checkout)
    assert done.returncode == 0, done.stderr
    assert calls[0] == "setup.sh "  # no extras, so no torch, no CI environments
    assert [c.split()[:3] for c in calls[1:]] == [["cigeval", "meta", "imagenhub"]] * 2
    assert "--human" in calls[1] and "gpt4o_0shot.tsv" in calls[2]  # ../shared beside the clone
    assert "Judging examples/samples.jsonl: skipped" in done.stdout


def test_main_installs_grounding_before_judging_with_the_default_tools(
    main_checkout: Path,
) -> None:
    done, calls = _main(main_checkout, CIGEVAL_MODEL="openai:judge")
    assert done.returncode == 0, done.stderr
    setups = [c for c in calls if c.startswith("setup.sh")]
    assert setups == ["setup.sh ", "setup.sh grounding"]
    assert calls.index("setup.sh grounding") < next(
        i for i, c in enumerate(calls) if c.startswith("cigeval evaluate")
    )


def test_main_installs_only_the_judges_extra_when_the_tools_leave_grounding_out(
    main_checkout: Path,
) -> None:
    done, calls = _main(
        main_checkout, CIGEVAL_MODEL="hf:tuned", CIGEVAL_ARGS="--tools 'Difference,Scene Graph'"
    )
    assert done.returncode == 0, done.stderr
    assert [c for c in calls if c.startswith("setup.sh")] == ["setup.sh ", "setup.sh hf"]
    (evaluate,) = [c for c in calls if c.startswith("cigeval evaluate")]
    assert "--tools Difference,Scene Graph" in evaluate


def test_main_sends_litellm_judges_to_their_own_environment(main_checkout: Path) -> None:
    done, calls = _main(main_checkout, CIGEVAL_MODEL="litellm:openai/gpt-4o")
    assert done.returncode == 2 and "docs/judges/litellm.md" in done.stderr
    assert not any(c.startswith("cigeval evaluate") for c in calls)
