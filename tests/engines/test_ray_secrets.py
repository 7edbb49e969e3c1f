"""``--engine ray`` in a process of its own, with Ray's temp folder inside the test's: no
credential reaches anything Ray writes, Ray's own log lines go to a file, and the run says
what Ray is doing while it starts."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cigeval.results.jsonl import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ray_root() -> Iterator[Path]:
    """Ray's temp root for one test: short, as Ray's unix sockets (at most 107 bytes) live
    below it, so not under pytest's long tmp_path; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="cgray", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_api_key_is_nowhere_under_rays_temp_folder(tmp_path: Path, ray_root: Path) -> None:
    pytest.importorskip("ray.data")
    key = f"sk-ray-SECRET-{secrets.token_hex(12)}"
    samples = write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:2])
    out = tmp_path / "out.jsonl"
    env = {
        **os.environ,
        "OPENAI_API_KEY": key,
        "RAY_TMPDIR": str(ray_root),
        "PYTHONPATH": str(ROOT),
        "CIGEVAL_CACHE_DIR": str(tmp_path / "cache"),
    }
    with FakeOpenAIServer(rule_judge()) as server:
        command = [
            sys.executable, "-m", "cigeval", "evaluate", str(samples),
            "--model", "openai:judge-model", "--base-url", server.base_url, "--out", str(out),
            "--engine", "ray", "--ray-workers", "1", "--tools", "Difference",
        ]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, timeout=400)
        sent = list(server.requests)
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 0, err
    assert len(list(read_records(out))) == 2
    # the workers did have the key: the judge server received it
    assert sent and all(r.header("Authorization") == f"Bearer {key}" for r in sent)
    written = [p for p in ray_root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert any(p.name.endswith(".log") or p.name.endswith(".out") for p in written), written
    leaks = [str(p) for p in written if key.encode() in p.read_bytes()]
    assert not leaks
    # what Ray was doing, in our own words; its own lines in a file, not on the terminal
    for line in ("ray: starting a local Ray", "ray: cluster ready", "ray: preflight on a worker",
                 "preflight on Ray", "ray: workers ready: first record back"):  # fmt: skip
        assert line in err, line
    assert (tmp_path / "out.ray.log").is_file()
    assert "(pid=" not in err and "(MapWorker" not in err
    assert key not in err and key not in done.stdout.decode(errors="replace")
