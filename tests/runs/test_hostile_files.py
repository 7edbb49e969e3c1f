"""Issue 41, replayed: an image path naming a FIFO, ``/dev/zero`` or a folder (or a file over
``--max-image-bytes``) is that sample's error within seconds, the others are judged, and
SIGTERM ends a run at once even while a read is under way (the CLI and the inspect_ai scorer
alike). Each hostile run has a clock: a FIFO waited on is released by a writer after 20 s,
and a run reading /dev/zero is left behind in its thread, so a regression fails, never
hangs the suite."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cigeval.results import read_records
from cigeval.results.lock import lock_path
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")


@contextlib.contextmanager
def fifo_released_after(fifo: Path, seconds: float) -> Iterator[None]:
    """Should the code under test wait on ``fifo`` (the bug), a writer comes after
    ``seconds`` and closes it, so the test fails by its clock instead of hanging."""
    done = threading.Event()

    def release() -> None:
        wait = seconds
        while not done.wait(wait):
            wait = 0.2
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError as exc:  # ENXIO: nobody reads it (yet)
                if exc.errno != errno.ENXIO:
                    return

    threading.Thread(target=release, daemon=True).start()
    try:
        yield
    finally:
        done.set()


def _hostile_samples(folder: Path, *names: str) -> tuple[Path, Path]:
    """The t2i sample, then one sample per hostile image path; the samples file and FIFO."""
    good = next(s for s in seven_task_samples(folder) if s["id"] == "t2i")
    fifo = folder / "fifo.png"
    os.mkfifo(fifo)
    paths = {"fifo": str(fifo), "zero": "/dev/zero", "folder": str(folder)}
    bad = [{**good, "id": name, "images": {"output": paths[name]}} for name in names]
    return write_jsonl(folder / "samples.jsonl", [good, *bad]), fifo


def _by_id(out: Path) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in read_records(out)}


EXPECTED = {
    "fifo": "output image is a FIFO (named pipe), not a regular file",
    "zero": "output image is a character device, not a regular file: /dev/zero",
    "folder": "output image path is a directory",
}


def _in_a_thread(run: Any, limit: float) -> Any:
    """``run()`` in a daemon thread; fails when it has not ended after ``limit`` seconds (a
    read of /dev/zero by mistake would never end: the thread is then left behind)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(run()), daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        pytest.fail(f"still running after {limit} s: it waits on a hostile image")
    return box[0]


@pytest.mark.parametrize("cache", ["the cache on", "--no-cache"])
def test_fifo_dev_zero_folder_and_oversized_images_are_errors_within_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    samples, fifo = _hostile_samples(tmp_path, "fifo", "zero", "folder")
    big = tmp_path / "big.png"
    with big.open("wb") as handle:
        handle.truncate(3_000_000)  # sparse, and over the limit below
    lines = samples.read_text().splitlines()
    large = {**json.loads(lines[0]), "id": "large", "images": {"output": str(big)}}
    samples.write_text("\n".join([*lines, json.dumps(large)]) + "\n")
    out = tmp_path / "out.jsonl"
    flags = ["--tools", "", "--max-image-bytes", "1000000"]
    flags += ["--no-cache"] if cache == "--no-cache" else []
    with FakeOpenAIServer(rule_judge()) as server, fifo_released_after(fifo, 20):
        started = time.monotonic()
        assert _in_a_thread(lambda: evaluate_cli(server, samples, out, *flags), 30) == 1
        assert time.monotonic() - started < 10
    records = _by_id(out)
    assert records["t2i"]["status"] == "ok"
    for name, message in EXPECTED.items():
        assert records[name]["status"] == "error" and message in records[name]["error"]
    assert "file is too large (3000000 bytes, limit 1000000 bytes)" in records["large"]["error"]


def test_sigterm_during_a_stalled_read_ends_the_run_with_143_keeping_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    good = next(s for s in seven_task_samples(tmp_path) if s["id"] == "t2i")
    (tmp_path / "slow.png").write_bytes((tmp_path / good["images"]["output"]).read_bytes())
    slow = {**good, "id": "slow", "images": {"output": "slow.png"}}
    samples = write_jsonl(tmp_path / "samples.jsonl", [good, slow])
    out = tmp_path / "out.jsonl"

    import cigeval.evaluation.replay as replay

    hashed = replay.known_file_sha256
    release = threading.Event()
    killed: list[float] = []

    def stalled(path: Path, *args: Any) -> str:  # a read on a file system that stopped
        if path.name == "slow.png":
            killed.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGTERM)
            release.wait(60)
        return hashed(path, *args)

    monkeypatch.setattr(replay, "known_file_sha256", stalled)
    before = signal.getsignal(signal.SIGTERM)
    try:
        with FakeOpenAIServer(rule_judge()) as server:
            status = evaluate_cli(server, samples, out, "--tools", "", "--concurrency", "1")
            ended = time.monotonic()
    finally:
        release.set()
    assert status == 143
    assert killed and ended - killed[0] < 10
    assert list(_by_id(out)) == ["t2i"] and not lock_path(out).exists()
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_while_a_failed_samples_files_are_hashed_without_the_cache_ends_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--no-cache: no replay key is hashed, but a sample whose image cannot be loaded has its
    files hashed for the record (a rerun judges it again once they change). A regular file
    whose read never ends (/proc/kmsg, a stalled network mount) held the event loop there,
    the others were never judged and SIGTERM went unheard."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    good = next(s for s in seven_task_samples(tmp_path) if s["id"] == "t2i")
    (tmp_path / "stuck.png").write_bytes(b"no image, and its second read never ends")
    stuck = {**good, "id": "stuck", "images": {"output": "stuck.png"}}
    samples = write_jsonl(tmp_path / "samples.jsonl", [good, stuck])
    out = tmp_path / "out.jsonl"

    import cigeval.sample_files as sample_files

    hashed = sample_files.known_file_sha256
    release = threading.Event()
    killed: list[float] = []

    def stalled(path: Path, *args: Any) -> str:
        if path.name == "stuck.png":
            killed.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGTERM)
            release.wait(20)
        return hashed(path, *args)

    monkeypatch.setattr(sample_files, "known_file_sha256", stalled)
    try:
        with FakeOpenAIServer(rule_judge()) as server:
            flags = ["--tools", "", "--concurrency", "1", "--no-cache"]
            status = evaluate_cli(server, samples, out, *flags)
            ended = time.monotonic()
    finally:
        release.set()
    assert status == 143
    assert killed and ended - killed[0] < 10
    assert list(_by_id(out)) == ["t2i"] and not lock_path(out).exists()


def test_outside_a_run_a_failed_samples_files_are_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a run records the hashes of a sample that failed to load: the inspect scorer,
    serve and Python callers answer its error at once, whatever its file's read would do."""
    import cigeval.sample_files as sample_files
    from cigeval import Evaluator, RunConfig, ScriptedBackend

    good = next(s for s in seven_task_samples(tmp_path) if s["id"] == "t2i")
    (tmp_path / "stuck.png").write_bytes(b"no image, and its second read never ends")
    hashed: list[Path] = []
    monkeypatch.setattr(sample_files, "known_file_sha256", lambda path, *_: hashed.append(path))
    evaluator = Evaluator(
        ScriptedBackend(rule_judge()), tools="", run_config=RunConfig(use_cache=False)
    )
    sample = {**good, "id": "stuck", "images": {"output": str(tmp_path / "stuck.png")}}
    score = evaluator.evaluate(sample)
    assert score.status == "error" and "stuck.png" in (score.error or "")
    assert hashed == [] and score.file_hashes == {}


def test_the_inspect_scorer_refuses_a_fifo_image_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("inspect_ai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    import asyncio

    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from cigeval import RunConfig
    from cigeval.integrations.inspect_ai import OUTPUT_KEY, inspect_samples, inspect_scorer

    samples, fifo = _hostile_samples(tmp_path, "fifo")
    items = [json.loads(line) for line in samples.read_text().splitlines()]
    dataset = inspect_samples(items, base_dir=tmp_path)
    config = RunConfig(cache_dir=tmp_path / "cache", preflight=False)  # the replay key hashes
    server = FakeOpenAIServer(rule_judge()).start()
    scorer = inspect_scorer("openai:m", base_url=server.base_url, tools="", run_config=config)

    async def score(item: Any, output: str) -> Any:
        state = TaskState(
            model="mockllm/model",  # type: ignore[arg-type]
            sample_id=item.id,
            epoch=1,
            input="",
            messages=[],
            metadata=item.metadata,
        )
        state.store.set(OUTPUT_KEY, output)
        return await scorer(state, Target(""))

    try:
        with fifo_released_after(fifo, 20):
            started = time.monotonic()
            judged = asyncio.run(score(dataset[1], str(fifo)))
            assert time.monotonic() - started < 10
        good = asyncio.run(score(dataset[0], str(tmp_path / "output.png")))
    finally:
        server.stop()
    assert EXPECTED["fifo"] in (judged.explanation or "")
    assert good.value == pytest.approx(0.7)


def test_a_fifo_as_a_cache_a_tasks_file_or_a_samples_file_is_refused_at_once(
    tmp_path: Path,
) -> None:
    from cigeval.backends.cache import ResponseCache
    from cigeval.errors import ConfigError
    from cigeval.sample import iter_samples_file
    from cigeval.tasks.files import load_tasks_file

    (tmp_path / "cache").mkdir()
    fifos = [tmp_path / "cache" / "cache.sqlite3", tmp_path / "tasks.json", tmp_path / "s.jsonl"]
    for fifo in fifos:
        os.mkfifo(fifo)
    with contextlib.ExitStack() as guards:
        for fifo in fifos:
            guards.enter_context(fifo_released_after(fifo, 20))
        started = time.monotonic()
        assert ResponseCache(tmp_path / "cache").lookup("a key") is None  # a miss
        with pytest.raises(ConfigError, match="not a regular file"):
            load_tasks_file(fifos[1])
        with pytest.raises(OSError, match="not a regular file"):
            list(iter_samples_file(fifos[2]))
        assert time.monotonic() - started < 10
