"""Batched fsync: records reach the OS at once and the disk in batches; kill -9 loses none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import cigeval.results.syncing as syncing
from cigeval.errors import ResultsWriteError
from cigeval.results.jsonl import ResultsWriter, read_records
from cigeval.results.syncing import BatchedSync
from tests.test_results_io import score

ROOT = Path(__file__).resolve().parent.parent


class CountingFsync:
    """Stands in for os.fsync: counts the calls (per thread name), fails when told to."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.fail_with: OSError | None = None
        self.called = threading.Event()

    def __call__(self, fd: int) -> None:
        self.threads.append(threading.current_thread().name)
        self.called.set()
        if self.fail_with is not None:
            raise self.fail_with


@pytest.fixture
def fsync(monkeypatch: pytest.MonkeyPatch) -> CountingFsync:
    counting = CountingFsync()
    monkeypatch.setattr(syncing.os, "fsync", counting)
    return counting


def test_records_wait_for_a_batch_and_are_fsynced_at_close(tmp_path: Path, fsync) -> None:
    path = tmp_path / "r.jsonl"
    writer = ResultsWriter(path, sync_interval_s=3600, sync_records=64)
    for name in "abc":
        writer.write(score(name))
    # written: in the file already, not yet on disk
    assert [r["id"] for r in read_records(path)] == ["a", "b", "c"]
    assert fsync.threads == []
    writer.close()
    assert fsync.threads == ["cigeval-fsync"]  # one fsync for the three, off the caller


def test_a_full_batch_is_fsynced_without_waiting_for_the_interval(tmp_path: Path, fsync) -> None:
    writer = ResultsWriter(tmp_path / "r.jsonl", sync_interval_s=3600, sync_records=4)
    for number in range(4):
        writer.write(score(f"s{number}"))
    assert fsync.called.wait(timeout=10), "four records waiting made no fsync"
    assert writer._sync.synced == 4
    writer.close()
    assert writer._sync.syncs == 1  # nothing was left for the close


def test_a_lone_record_is_fsynced_after_the_interval(tmp_path: Path, fsync) -> None:
    writer = ResultsWriter(tmp_path / "r.jsonl", sync_interval_s=0.05, sync_records=64)
    writer.write(score("a"))
    assert fsync.called.wait(timeout=10), "no fsync after the interval"
    assert writer._sync.synced == 1
    writer.close()


def test_a_failed_fsync_stops_the_writer_with_a_clear_error(tmp_path: Path, fsync) -> None:
    fsync.fail_with = OSError(5, "Input/output error")
    path = tmp_path / "r.jsonl"
    writer = ResultsWriter(path, sync_interval_s=0.0, sync_records=1)
    writer.write(score("a"))
    assert fsync.called.wait(timeout=10)
    deadline = time.monotonic() + 10
    while writer._sync._error is None:  # the thread records the failure after raising
        assert time.monotonic() < deadline
        time.sleep(0.001)
    with pytest.raises(ResultsWriteError, match=r"cannot flush .* Input/output error"):
        writer.write(score("b"))
    writer.close()  # the error was reported once; closing releases the file
    assert [r["id"] for r in read_records(path)] == ["a", "b"]  # both complete in the file
    ResultsWriter(path).close()  # and the lock was released


def test_a_failed_last_fsync_is_raised_at_close(tmp_path: Path, fsync) -> None:
    fsync.fail_with = OSError(28, "No space left on device")
    writer = ResultsWriter(tmp_path / "r.jsonl", sync_interval_s=3600)
    writer.write(score("a"))
    with pytest.raises(ResultsWriteError, match="No space left on device"):
        writer.close()
    ResultsWriter(tmp_path / "r.jsonl").close()  # the lock was released all the same


def test_sync_settings_are_checked() -> None:
    with pytest.raises(ValueError):
        BatchedSync(0, interval_s=-1)
    with pytest.raises(ValueError):
        BatchedSync(0, max_records=0)


def test_kill_9_loses_no_record_written_but_not_yet_fsynced(tmp_path: Path) -> None:
    """A process killed while its records wait for their fsync: they are all in the file, and
    the resumed writer skips exactly them."""
    path = tmp_path / "r.jsonl"
    child = textwrap.dedent(
        f"""
        import os, sys, time
        import cigeval.results.syncing as syncing
        from cigeval.results.jsonl import ResultsWriter
        from tests.test_results_io import score

        fsyncs = []
        syncing.os.fsync = lambda fd: fsyncs.append(fd)
        writer = ResultsWriter({str(path)!r}, sync_interval_s=3600, sync_records=10**6)
        for number in range(50):
            writer.write(score(f"s{{number}}"))
        print(f"written {{len(fsyncs)}}", flush=True)
        time.sleep(600)
        """
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, env=environment
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert line.strip() == "written 0"  # killed before any fsync
    assert [r["id"] for r in read_records(path)] == [f"s{n}" for n in range(50)]
    with ResultsWriter(path) as writer:
        assert writer.finished == {f"s{n}" for n in range(50)} and writer.skipped == []
