"""An ``anthropic:`` judge against fakellm, a third-party server of the Anthropic messages API
started as a separate process on 127.0.0.1 (its rules answer cigeval's plan and score prompts).

fakellm has its own FastAPI/uvicorn pins, so it lives in a virtual environment of its own:
the test finds its command at ``$FAKELLM_BIN``, on the PATH, or at ``.venv-fakellm/bin/fakellm``
in the repository (``scripts/setup_test.sh`` makes that one), and is skipped when there is none.
``tests/anthropic_server.py`` covers the same path in-process everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cigeval.cli import main
from cigeval.results.jsonl import read_records

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "samples.jsonl"


def fakellm_command() -> str | None:
    """Where the ``fakellm`` command is, or None."""
    candidates = [os.environ.get("FAKELLM_BIN"), shutil.which("fakellm")]
    candidates.append(str(ROOT / ".venv-fakellm" / "bin" / "fakellm"))
    return next((c for c in candidates if c and Path(c).is_file()), None)


def _plan(questions: int) -> str:
    entries = [
        {"task_id": str(n), "reasoning": "plain look", "used": "no", "tool": "None", "query": ""}
        for n in range(1, questions + 1)
    ]
    return "```json\n" + json.dumps(entries) + "\n```"


def rules() -> dict[str, object]:
    """fakellm rules: a plan for one to three sub-questions, then a score of 6 for any other
    prompt (first match wins, so the longest plan comes first)."""
    plans = [
        {
            "name": f"plan-{n}",
            "when": {"messages_contain": marker},
            "respond": {"content": _plan(n)},
        }
        # the planner's task lines, "<Task title> Task <n>: ..." (the paper's request layout)
        for n, marker in ((3, " Task 3: "), (2, " Task 2: "), (1, "### Task"))
    ]
    score = {"name": "score", "respond": {"content": '{"score": 6, "reasoning": "fakellm"}'}}
    return {"version": 1, "rules": [*plans, score]}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=2) as response:
        return dict(json.loads(response.read()))


@pytest.fixture
def fakellm(tmp_path: Path) -> Iterator[str]:
    command = fakellm_command()
    if command is None:
        pytest.skip("fakellm is not installed (FAKELLM_BIN, PATH or .venv-fakellm)")
    config = tmp_path / "fakellm.yaml"
    config.write_text(yaml.safe_dump(rules()))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    args = [command, "serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(config)]
    log = (tmp_path / "fakellm.log").open("w")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _get(url + "/_fakellm/stats")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"fakellm did not start: {(tmp_path / 'fakellm.log').read_text()}")
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def test_claude_judge_against_fakellm_records_its_provenance(fakellm: str, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    argv = ["evaluate", str(EXAMPLES), "--model", f"anthropic:claude-judge@{fakellm}"]
    argv += ["--out", str(out), "--tools", "Difference", "--quiet", "--no-cache"]
    assert main(argv) == 0
    records = list(read_records(out))
    assert len(records) == 8 and all(r["status"] == "ok" for r in records)
    assert {r["score"] for r in records} == {0.6}  # min of the sub-scores / 10
    for record in records:
        (judge,) = record["provenance"]["judges"]
        assert judge["endpoint"] == fakellm
        assert judge["served_models"] == ["claude-judge"]  # fakellm echoes the name asked for
        assert set(judge["finish_reasons"]) == {"stop"}  # end_turn, in the one vocabulary
    matched = _get(fakellm + "/_fakellm/stats")["by_rule"]
    assert isinstance(matched, dict) and matched["score"] > 0
    assert sum(matched.get(f"plan-{n}", 0) for n in (1, 2, 3)) == 8  # one plan per sample
