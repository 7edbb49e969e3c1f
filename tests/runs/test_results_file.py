"""The results file: one run at a time whatever name reaches it, and a write that fails
stops the run with one line, the file ending with its last complete record."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import cigeval.results.jsonl as jsonl
from cigeval.results import ResultsLock, ResultsLocked, ResultsWriter, read_records
from cigeval.results.lock import lock_path
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

TOOLS = ("--tools", "Difference")


@pytest.fixture
def samples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path))


@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_a_second_run_through_another_name_of_the_file_exits_2(
    samples: Path, tmp_path: Path, capsys, how: str
) -> None:
    out = tmp_path / "out.jsonl"
    other = tmp_path / "elsewhere" / "alias.jsonl"
    other.parent.mkdir()
    with ResultsWriter(out) as holder, FakeOpenAIServer(rule_judge()) as server:
        if how == "symlink":
            other.symlink_to(out)
        else:
            os.link(out, other)
        assert evaluate_cli(server, samples, other, *TOOLS) == 2
        assert not server.requests  # nothing judged, nothing paid twice
        with pytest.raises(ResultsLocked):
            ResultsLock(other).acquire()
        assert holder.finished == set()
    err = capsys.readouterr().err
    assert "is writing to" in err
    if how == "hard link":
        assert "another name of the same file: a hard link" in err
    else:
        assert f"pid {os.getpid()}" in err  # the symlink finds the holder's own lock file
        assert lock_path(other) == lock_path(out)
    assert out.read_bytes() == b""


def test_the_lock_follows_a_results_file_the_resume_rewrote(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "status": "error"}\n{"id": "b", "status": "ok"}\n')
    with ResultsWriter(out, retry_errors=True) as writer:  # drops 'a': the file is rewritten
        assert writer.retrying == {"a"}
        link = tmp_path / "link.jsonl"
        os.link(out, link)  # a hard link to the file as it is now
        with pytest.raises(ResultsLocked, match="hard link"):
            ResultsLock(link).acquire()


def test_a_full_disk_stops_the_run_with_one_line_and_a_readable_file(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    out = tmp_path / "out.jsonl"
    real_write = os.write
    lines = {"written": 0}

    def fill_up(fd: int, data: bytes | memoryview) -> int:
        # the third record: half of it reaches the disk, then the disk is full
        if fd > 2 and lines["written"] == 2:
            if not getattr(fill_up, "half", False):
                fill_up.half = True  # type: ignore[attr-defined]
                return real_write(fd, bytes(data)[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        written = real_write(fd, data)
        lines["written"] += bytes(data).count(b"\n")
        return written

    with FakeOpenAIServer(rule_judge()) as server:
        monkeypatch.setattr(jsonl.os, "write", fill_up)
        status = evaluate_cli(server, samples, out, *TOOLS, "--concurrency", "1")
        monkeypatch.setattr(jsonl.os, "write", real_write)
        err = capsys.readouterr().err
        assert status == 2
        (line,) = [x for x in err.splitlines() if x.startswith("cigeval evaluate: error:")]
        assert "No space left on device" in line and "last complete record" in line
        assert "Traceback" not in err
        raw = out.read_bytes()
        assert raw.endswith(b"\n") and raw.count(b"\n") == 2  # the torn third record was cut
        assert len(list(read_records(out))) == 2
        # once there is room again, the same command finishes the file
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
    assert len(list(read_records(out))) == 7


def test_a_results_folder_that_cannot_be_written_is_exit_2_in_one_line(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    folder = tmp_path / "read-only"
    folder.mkdir()
    real_open = os.open

    def read_only(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        if Path(path).parent == folder and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    with FakeOpenAIServer(rule_judge()) as server:
        status = evaluate_cli(server, samples, folder / "out.jsonl", *TOOLS)
        assert not server.requests
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Read-only file system" in err
    assert "cannot write results to" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_exit_2(samples: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with FakeOpenAIServer(rule_judge()) as server:
            assert evaluate_cli(server, samples, folder / "out.jsonl", *TOOLS) == 2
    finally:
        folder.chmod(0o700)
    assert "cannot write results to" in capsys.readouterr().err
