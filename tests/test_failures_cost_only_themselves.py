"""No single input can kill a run: one valid record per readable sample, and no traceback.

Surrogates in replies and ids, unreadable samples lines, a results file with a bad byte, a
cache that cannot be written, a second run on the same --out, SIGTERM, oversized images.
Runs go through ``cigeval evaluate`` against :class:`FakeOpenAIServer` on 127.0.0.1; the
concurrent-run and SIGTERM tests start real subprocesses.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.errors import InputError
from cigeval.images import load_image
from cigeval.results.jsonl import ResultsWriter
from cigeval.results.lock import ResultsLock, ResultsLocked, lock_path
from cigeval.score import Score
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("--tools", "Difference,Scene Graph")


def strictly_utf8_records(out: Path) -> list[dict[str, Any]]:
    """Every line of ``out``, which must be a whole record of valid UTF-8."""
    data = out.read_bytes()
    text = data.decode("utf-8")  # strict: raises on any invalid byte or surrogate
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def one_per_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)), f"repeated records: {ids}"
    return {r["id"]: r for r in records}


# --------------------------------------------------------------------- surrogates


def test_surrogates_in_replies_and_ids_end_as_valid_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = seven_task_samples(tmp_path)[:2]
    rows[0] = {**rows[0], "id": "odd\ud800id", "prompt": "a red\udfff square"}
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)  # written as \\ud800 escapes
    healthy = rule_judge()

    def judge(body: dict[str, Any]) -> str:
        reply = healthy(body)
        if not reply.startswith('{"score"'):
            return reply  # the plan
        verdict = {**json.loads(reply), "reasoning": "looks fine \ud800 mostly"}
        return json.dumps(verdict, ensure_ascii=False)  # the server sends \\ud800 escapes

    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(judge) as server:
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
        records = one_per_id(strictly_utf8_records(out))
        assert set(records) == {"odd\ufffdid", "mie"}
        reasons = [s["reasoning"] for r in records.values() for s in r["sub_scores"]]
        assert all(reason == "looks fine \ufffd mostly" for reason in reasons)
        # A rerun finds every id done: the id read back matches the id written.
        sent = len(server.requests)
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
        assert len(server.requests) == sent
    assert "Traceback" not in capsys.readouterr().err
    assert len(strictly_utf8_records(out)) == 2


def test_the_writer_makes_any_record_valid_utf8(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    score = Score(id="a\ud800", task="text_guided_ig", status="error", error="bad \udc00 text")
    unwritable = Score(id="b", task="text_guided_ig", status="ok", value=0.5)
    unwritable.details = {"nested": _nested(2000)}  # deeper than JSON serialisation goes
    with ResultsWriter(out) as writer:
        writer.write(score)
        writer.write(unwritable)
        assert writer.finished == {"a\ufffd", "b"}
    first, second = strictly_utf8_records(out)
    assert (first["id"], first["error"]) == ("a\ufffd", "bad \ufffd text")
    assert second["id"] == "b" and second["status"] == "error"
    assert "could not be written" in second["error"]


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


# --------------------------------------------------------------------- samples lines


def test_unreadable_samples_lines_become_their_own_error_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = seven_task_samples(tmp_path)[:2]
    path = tmp_path / "samples.jsonl"
    lines = [
        b"\xef\xbb\xbf" + json.dumps(good[0]).encode(),  # a byte order mark first
        b'{"id": "latin1", "task": "text_guided_ig", "prompt": "caf\xe9"}',  # not UTF-8
        b'{"id": ' + b"9" * 5000 + b"}",  # a number Python will not convert
        b"[" * 100_000 + b"]" * 100_000,  # nesting no parser follows
        b'{"id": "cut", "task": ',  # invalid JSON
        json.dumps(good[1]).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, path, out, *TOOLS) == 1
    records = one_per_id(strictly_utf8_records(out))
    assert set(records) == {"t2i", "mie", "@line:2", "@line:3", "@line:4", "@line:5"}
    assert records["t2i"]["status"] == "ok" and records["mie"]["status"] == "ok"
    assert "not UTF-8 (byte 0xe9" in records["@line:2"]["error"]
    assert "digits" in records["@line:3"]["error"]
    assert "nested too deeply" in records["@line:4"]["error"]
    assert "invalid JSON" in records["@line:5"]["error"]
    assert "Traceback" not in capsys.readouterr().err

    assert main(["validate", str(path), "--json"]) == 1
    *problems, summary = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p["line"] for p in problems] == [2, 3, 4, 5]
    assert summary["summary"]["invalid"] == 4


def test_a_bad_byte_in_the_results_file_is_moved_aside_and_the_sample_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:3])
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
        first, second, third = out.read_bytes().splitlines(keepends=True)
        damaged = second.replace(b'"status"', b'"st\xffatus"')
        out.write_bytes(first + damaged + third + b'{"id": "torn", "sta')
        capsys.readouterr()
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
    err = capsys.readouterr().err
    assert "2 unreadable line(s)" in err and "r.jsonl.rejected" in err
    records = one_per_id(strictly_utf8_records(out))
    assert set(records) == {"t2i", "mie", "tie"}
    rejected = (tmp_path / "r.jsonl.rejected").read_bytes()
    assert rejected == damaged + b'{"id": "torn", "sta\n'  # kept byte for byte


# --------------------------------------------------------------------- cache


def test_a_cache_that_cannot_be_written_is_a_miss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    samples = write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:3])
    not_a_folder = tmp_path / "cache-is-a-file"
    not_a_folder.write_text("in the way")
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        status = evaluate_cli(server, samples, out, *TOOLS, "--cache-dir", str(not_a_folder))
    assert status == 0
    assert all(r["status"] == "ok" for r in one_per_id(strictly_utf8_records(out)).values())
    warnings = [r.getMessage() for r in caplog.records if r.name == "cigeval.backends.cache"]
    assert len(warnings) == 1  # once, not once per call
    assert "could not write to the cache" in warnings[0] and "without caching" in warnings[0]
    assert "Traceback" not in capsys.readouterr().err


# --------------------------------------------------------------------- one run per --out


def _command(server: FakeOpenAIServer, samples: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "cigeval", "evaluate", str(samples),
        "--model", "openai:judge-model", "--base-url", server.base_url,
        "--out", str(out), "--quiet", *TOOLS, *extra,
    ]  # fmt: skip


def _environment(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "sk-test",
        "CIGEVAL_CACHE_DIR": str(tmp_path / "cache"),
    }


def _wait_for(condition: Any, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_second_run_on_the_same_out_exits_2_naming_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = seven_task_samples(tmp_path)[:3]
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge(), latency_s=0.05) as server:
        first = subprocess.Popen(
            _command(server, samples, out, "--concurrency", "1"),
            env=_environment(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_for(lambda: len(server.requests) >= 2, first, "the first run started")
            second = evaluate_cli(server, samples, out, *TOOLS)
        finally:
            _, first_err = first.communicate(timeout=120)
    assert second == 2
    err = capsys.readouterr().err
    assert f"pid {first.pid}" in err and "is writing to" in err
    assert first.returncode == 0, first_err.decode()
    assert set(one_per_id(strictly_utf8_records(out))) == {r["id"] for r in rows}
    assert not lock_path(out).exists()


def test_the_lock_is_exclusive_released_and_never_stale(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with ResultsWriter(out):
        with pytest.raises(ResultsLocked, match=f"pid {os.getpid()}"):
            ResultsWriter(out)
        with pytest.raises(ResultsLocked):
            ResultsLock(out).acquire()
    with ResultsLock(out):  # released by close
        pass
    # A holder killed with -9 leaves the lock file behind, but not the lock.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from cigeval.results.lock import ResultsLock; "
            "ResultsLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)",
            str(out),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    with pytest.raises(ResultsLocked, match=f"pid {holder.pid}"):
        ResultsLock(out).acquire()
    holder.kill()
    holder.wait()
    assert lock_path(out).exists()
    with ResultsLock(out) as lock:
        assert lock.held


# --------------------------------------------------------------------- SIGTERM


def test_sigterm_ends_a_run_like_ctrl_c_and_the_rerun_finishes(tmp_path: Path) -> None:
    rows = seven_task_samples(tmp_path)
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge(), latency_s=0.15) as server:
        process = subprocess.Popen(
            _command(server, samples, out, "--concurrency", "2"),
            env=_environment(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _wait_for(lambda: out.exists() and out.read_bytes().count(b"\n") >= 1, process, "a record")
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        _, err = process.communicate(timeout=60)
        stopped_in = time.monotonic() - started
        text = err.decode()
        assert process.returncode == 143, text
        assert stopped_in < 10
        assert "terminated (SIGTERM)" in text and "rerun the same command" in text
        assert "samples:" in text and "Traceback" not in text
        kept = one_per_id(strictly_utf8_records(out))
        assert 1 <= len(kept) < len(rows)
        assert not lock_path(out).exists()
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
    assert set(one_per_id(strictly_utf8_records(out))) == {r["id"] for r in rows}


# --------------------------------------------------------------------- images


def test_an_oversized_image_file_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = tmp_path / "huge.png"
    with huge.open("wb") as handle:  # sparse: 1 GiB that takes no disk space
        handle.truncate(1024**3)
    not_an_image = tmp_path / "noise.png"
    not_an_image.write_bytes(b"\0" * 4096)

    def no_whole_reads(self: Path) -> bytes:
        raise AssertionError(f"{self} was read whole")

    monkeypatch.setattr(Path, "read_bytes", no_whole_reads)
    with pytest.raises(InputError, match="file is too large"):
        load_image(huge, role="output", sample_id="s")
    with pytest.raises(InputError, match="corrupt or not an image"):
        load_image(not_an_image, role="output", sample_id="s")
    with pytest.raises(InputError, match="file is too large"):
        load_image(not_an_image, role="output", sample_id="s", max_bytes=1000)
