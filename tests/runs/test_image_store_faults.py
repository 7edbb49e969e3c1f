"""Issue 41, replayed: the folder of images shown to the judge (``RESULTS.images``) is never
written through a planted link, and a full disk or a folder that cannot be written ends the
run with one line and exit status 2."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from cigeval.errors import ResultsWriteError
from cigeval.image_store import ImageStore
from cigeval.images import EncodedImage
from cigeval.results import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

IMAGE = EncodedImage(b"not really a png", "image/png", "ab" + "0" * 62, 1, 1)


@pytest.fixture
def samples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    two = [s for s in seven_task_samples(tmp_path) if s["id"] in ("t2i", "tie")]
    return write_jsonl(tmp_path / "samples.jsonl", two)


def _one_line(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cigeval evaluate: error: "), err
    for word in words:
        assert word in lines[0], err


def test_a_link_planted_at_the_image_folder_stops_the_run_before_it_starts(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.images").symlink_to(elsewhere)
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, "--tools", "") == 2
        assert not server.requests
    _one_line(capsys, "out.images is a symbolic link")
    assert list(elsewhere.iterdir()) == [] and not out.exists()


def test_the_store_writes_through_no_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = ImageStore(tmp_path / "store")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "ab").symlink_to(elsewhere)  # a sub-folder planted as a link
    with pytest.raises(ResultsWriteError, match="is a symbolic link"):
        store.put(IMAGE)
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "store" / "ab").unlink()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "store" / "ab").mkdir()
    store.path_for(IMAGE.sha256).symlink_to(victim)  # a link at the image's own name
    path = store.put(IMAGE)
    assert not path.is_symlink() and path.read_bytes() == IMAGE.data
    assert victim.read_text() == "precious\n"
    linked = ImageStore(tmp_path / "linked")
    (tmp_path / "linked").symlink_to(elsewhere)  # the folder itself, from Python
    with pytest.raises(ResultsWriteError, match="is a symbolic link"):
        linked.put(IMAGE)
    assert list(elsewhere.iterdir()) == []


def test_a_full_disk_under_the_image_folder_is_one_line_and_exit_2(
    samples: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cigeval.image_store as image_store

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd: int, mode: str = "r", *args: Any) -> Any:
        handle = real_fdopen(fd, mode, *args)
        where = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else ""
        return Full(handle) if ".images" in where and "w" in mode else handle

    monkeypatch.setattr(image_store.os, "fdopen", fdopen)
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, "--tools", "", "--concurrency", "1") == 2
    _one_line(capsys, "cannot write the images shown to the judge", "No space left on device")
    assert list(read_records(out)) == []  # nothing half-written, nothing claimed
    leftovers = [p for p in (tmp_path / "out.images").rglob("*") if p.is_file()]
    assert leftovers == []


def test_an_image_folder_that_cannot_be_made_is_one_line_and_exit_2(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.images").write_text("a file in the way")
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, "--tools", "") == 2
    _one_line(capsys, "cannot write the images shown to the judge")
    assert (tmp_path / "out.images").read_text() == "a file in the way"


def test_samples_in_flight_that_meet_the_same_fault_add_nothing_to_the_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight samples at once, every one stopped by the image folder: the first says why,
    the others' errors are taken, never printed as unretrieved task exceptions."""
    import gc

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    t2i = next(s for s in seven_task_samples(tmp_path) if s["id"] == "t2i")
    samples = write_jsonl(tmp_path / "samples.jsonl", [{**t2i, "id": f"s{i}"} for i in range(8)])
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.images").write_text("a file in the way")
    together = threading.Barrier(8, timeout=10)
    judge = rule_judge()

    def reply(body: dict[str, Any]) -> str:
        together.wait()  # every sample's answer at once: they meet the fault together
        return judge(body)

    with FakeOpenAIServer(reply) as server:
        assert evaluate_cli(server, samples, out, "--tools", "", "--no-cache") == 2
    gc.collect()  # an unretrieved task exception is said when its task is collected
    _one_line(capsys, "cannot write the images shown to the judge")
    said = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert not any("never retrieved" in message for message in said), said
