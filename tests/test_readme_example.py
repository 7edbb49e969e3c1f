"""The README's Python example, and its first judging example (``cigeval evaluate``, then
``cigeval report``), run as written against a local OpenAI-compatible server.

Only what the example leaves to the reader is supplied: the two image files, a ``samples``
list, the server (its spec strings get the local server's URL) and an API key. Grounding
runs with a labelled stand-in detector (no weights can be downloaded here).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image

import cigeval
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.tools import GroundingTool
from cigeval.tools.registry import TOOLS
from tests.judge_view import RecordingDetector

README = Path(__file__).resolve().parents[1] / "README.md"


def python_example() -> str:
    """The first ``python`` block of the README's "## Python" section."""
    section = README.read_text(encoding="utf-8").split("\n## Python\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "README.md has no python block under ## Python"
    return match.group(1)


def test_the_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = python_example()
    Image.new("RGB", (96, 80), (40, 60, 200)).save(tmp_path / "src.png")
    Image.new("RGB", (96, 80), (200, 40, 40)).save(tmp_path / "edited.png")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    detector = RecordingDetector()
    with FakeOpenAIServer(rule_judge(default_score=6)) as server, TOOLS.scoped():
        TOOLS.register("Grounding", GroundingTool(detector=detector), replace=True)  # type: ignore[arg-type]
        specs = {
            '"openai:gpt-4o-2024-05-13"': f'"openai:gpt-4o-2024-05-13@{server.base_url}"',
            "http://localhost:8000/v1": server.base_url,
        }
        for written, local in specs.items():
            assert written in code, f"the README example no longer uses {written}"
            code = code.replace(written, local)
        samples = [
            {
                "id": f"car-{n}",
                "task": "text_guided_ie",
                "instruction": "make the car red",
                "images": {"source": "src.png", "output": "edited.png"},
            }
            for n in range(2, 5)
        ]
        names: dict[str, Any] = {"samples": samples}
        compiled = compile(code, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        outcome = eval(compiled, names)  # the example awaits: a coroutine to run
        assert inspect.iscoroutine(outcome)
        asyncio.run(outcome)
        asked = len(server.requests)
    score = names["score"]
    assert score.status == "ok" and score.value == pytest.approx(0.6)
    offline = names["offline"]
    assert offline.status == "ok" and offline.config["tools"] == ["Difference", "Scene Graph"]
    assert [s.status for s in names["scores"]] == ["ok"] * 3
    assert names["result"].summary.statuses["ok"] == 3
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 3
    assert isinstance(cigeval.to_frame(names["scores"]), pd.DataFrame)
    assert asked > 0


def test_the_readme_offline_line_judges_without_grounding_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example's offline call, run as written with no stand-in detector: Grounding is not
    offered, so its missing weights stop nothing (the default tools would fail the preflight
    naming this very keyword)."""
    (line,) = [
        block
        for block in python_example().split("\n\n")
        if 'tools="Difference,Scene Graph"' in block
    ]
    Image.new("RGB", (96, 80), (40, 60, 200)).save(tmp_path / "src.png")
    Image.new("RGB", (96, 80), (200, 40, 40)).save(tmp_path / "edited.png")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    sample = {
        "id": "car-1",
        "task": "text_guided_ie",
        "instruction": "make the car red",
        "images": {"source": "src.png", "output": "edited.png"},
    }
    with FakeOpenAIServer(rule_judge(default_score=6)) as server:
        code = line.replace(
            '"openai:gpt-4o-2024-05-13"', f'"openai:gpt-4o-2024-05-13@{server.base_url}"'
        )
        names: dict[str, Any] = {"sample": sample, "cigeval": cigeval}
        exec(compile(code, "README.md", "exec"), names)
    offline = names["offline"]
    assert offline.status == "ok", offline.error
    assert offline.value == pytest.approx(0.6)
    assert offline.config["tools"] == ["Difference", "Scene Graph"]


def first_judging_example() -> str:
    """The first ``bash`` block of the README's "## Judge your first images" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Judge your first images", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match is not None, "README.md has no bash block under ## Judge your first images"
    return match.group(1)


def test_the_readme_first_judging_example_runs_offline_as_written(tmp_path: Path) -> None:
    """The block's commands, run by bash in a copy of the examples with no network, no key and
    no Grounding weights: only the local server's address is this test's own."""
    script = first_judging_example()
    assert "http://localhost:8000/v1" in script and "--tools" in script
    assert "## Judge your first images" in README.read_text().split("## Python")[0]
    shutil.copytree(README.parent / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CIGEVAL_"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(README.parent),
        HF_HUB_OFFLINE="1",
        CIGEVAL_CACHE_DIR=str(tmp_path / "cache"),
    )
    with FakeOpenAIServer(rule_judge(default_score=7)) as server:
        local = script.replace("http://localhost:8000/v1", server.base_url)
        done = subprocess.run(
            ["bash", "-e", "-c", local], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        asked = len(server.requests)
    assert done.returncode == 0, done.stderr
    records = [
        json.loads(line) for line in (tmp_path / "runs/first.jsonl").read_text().splitlines()
    ]
    assert len(records) == 8 and {r["status"] for r in records} == {"ok"}
    assert all(r["config"]["tools"] == ["Difference", "Scene Graph"] for r in records)
    assert asked > 0 and (tmp_path / "runs/first.html").is_file()


def reproduction_example() -> str:
    """The ``bash`` block of the README's "## Reproduce the paper" section."""
    section = README.read_text(encoding="utf-8").split("\n## Reproduce the paper", 1)[1]
    match = re.search(r"```bash\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    assert match is not None, "README.md has no bash block under ## Reproduce the paper"
    return match.group(1)


def test_the_readme_reproduction_commands_run_as_written(tmp_path: Path) -> None:
    """Run from a checkout beside ``shared/`` (the README's setting), the block's commands
    find the recorded judgments they name and print a row per judge. Only the line about the
    reader's own run is left out; the shared folder is wherever this checkout finds it."""
    from tests.meta.conftest import SHARED

    if SHARED is None:
        pytest.skip("shared data folder not found")
    script = reproduction_example()
    assert "../shared/" in script
    lines = [line for line in script.splitlines() if "runs/yours.jsonl" not in line]
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").symlink_to(SHARED, target_is_directory=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["PYTHONPATH"] = str(README.parent)
    done = subprocess.run(
        ["bash", "-e", "-c", "\n".join(lines)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[0].strip() for line in done.stdout.splitlines() if "|" in line]
    assert {"human raters", "gpt4o_0shot", "gpt4o_1shot"} <= set(rows), done.stdout
