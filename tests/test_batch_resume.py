"""A ``--batch`` run killed between submit and download resumes the same batch: no request
is submitted (or paid for) twice, and the records are those of direct calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cigeval.testing.batch_server import FakeBatchServer
from tests.batch_support import TOOLS, judge, normalised, records_by_id, run_cli, study

ROOT = Path(__file__).resolve().parents[1]


def _wait_for(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_run_killed_after_submitting_resumes_polling_the_same_batch(tmp_path: Path) -> None:
    samples = study(tmp_path)
    direct, out = tmp_path / "direct" / "results.jsonl", tmp_path / "batch" / "results.jsonl"
    state = out.with_name("results.batches.json")
    with FakeBatchServer(judge()) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "HF_HUB_OFFLINE": "1"}
        assert run_cli(server, samples, direct, "--cache-dir", str(tmp_path / "c1")) == 0
        direct_calls = len(server.requests)
        server.replies = judge()
        server.hold()  # batches stay in progress: the run is killed while it polls
        command = [
            sys.executable, "-m", "cigeval", "evaluate", str(samples),
            "--model", f"openai:judge-model@{server.base_url}", "--out", str(out),
            "--quiet", "--no-preflight", *TOOLS, "--batch", "--batch-poll", "0.05",
            "--cache-dir", str(tmp_path / "c2"),
        ]  # fmt: skip
        process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE)
        try:
            _wait_for(lambda: server.batches and server.batches[0].checks >= 2, 60, "polling")
            _wait_for(state.is_file, 10, "the batch record")
        finally:
            process.kill()
            _, stderr = process.communicate(timeout=30)
        assert process.returncode != 0, stderr.decode(errors="replace")
        (first,) = server.batches
        recorded = json.loads(state.read_text())["batches"]
        assert [b["id"] for b in recorded] == [first.id]
        assert sorted(recorded[0]["custom_ids"]) == sorted(first.custom_ids)
        assert not out.exists() or not out.read_text().strip()

        server.release()
        flags = ("--batch", "--batch-poll", "0.02", "--cache-dir", str(tmp_path / "c2"))
        assert run_cli(server, samples, out, *flags) == 0
    # The killed run's batch was polled again, not submitted again: every request once.
    submitted = server.batched_custom_ids()
    assert len(submitted) == len(set(submitted)) == direct_calls
    assert not set(first.custom_ids) & {c for b in server.batches[1:] for c in b.custom_ids}
    assert first.checks > 2  # the second run checked it too
    recorded = json.loads(state.read_text())["batches"]
    assert [b["id"] for b in recorded] == [b.id for b in server.batches]
    assert all(b["downloaded"] for b in recorded)
    a, b = records_by_id(direct), records_by_id(out)
    assert a.keys() == b.keys() and len(b) == 7
    for sample_id in a:
        assert normalised(a[sample_id], direct) == normalised(b[sample_id], out), sample_id
    # The resumed batch's requests were sent (and counted) by the killed run; this run's
    # records count the requests it submitted itself.
    sent_now = len(submitted) - len(first.custom_ids)
    assert sum(r["usage"]["http_attempts"] for r in b.values()) == sent_now
    assert sum(r["usage"]["http_attempts"] for r in a.values()) == direct_calls
