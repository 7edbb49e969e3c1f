"""Issue 41, replayed: ``cigeval report -o`` never writes over an input, never half a page,
never through a link; a bad thumbnail cache row never reaches a page."""

from __future__ import annotations

import errno
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cigeval.cli import main
from cigeval.report import build_report
from cigeval.results import ResultsLock

PAGE = "<!doctype html><p>an old page</p>\n"


def _results(folder: Path, samples: Path | None = None) -> Path:
    records = []
    for n in range(3):
        path = folder / f"out{n}.png"
        Image.effect_noise((40, 30), 20 + 10 * n).convert("RGB").save(path)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        record: dict[str, Any] = {
            "id": f"s{n}",
            "task": "text_guided_ig",
            "status": "ok",
            "score": 0.1 * n,
            "sub_scores": [],
            "model": "AB"[n % 2],
            "input_images": {"output": sha},
            "image_files": {sha: str(path)},
        }
        if samples is not None:
            record["provenance"] = {"samples_file": {"path": str(samples), "size": 1}}
        records.append(record)
    results = folder / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    return results


def _report(results: Path, out: Path, *extra: str) -> int:
    return main(["report", str(results), "-o", str(out), "--bootstrap", "10", *extra])


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cigeval report: error: "), err
    return lines[0]


def test_report_over_its_results_file_is_refused_and_the_file_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path)
    before = results.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(results)
    for out in (results, link):
        assert _report(results, out, "--no-thumbnail-cache") == 2
        assert "would overwrite the results file" in _one_error_line(capsys)
    assert results.read_bytes() == before and link.is_symlink()


def test_report_over_a_samples_file_or_any_jsonl_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"id": "s0", "task": "text_guided_ig", "prompt": "a cat"}\n')
    other = tmp_path / "other.txt"  # JSON lines under any name
    other.write_text('\n["a", 1]\n')
    results = _results(tmp_path, samples)
    for out in (samples, other):
        before = out.read_bytes()
        assert _report(results, out, "--no-thumbnail-cache") == 2
        assert "holds JSON lines" in _one_error_line(capsys)
        assert out.read_bytes() == before
    # from Python too, and a samples file the records name is refused even when not JSONL
    samples.write_text("not json\n")
    report = build_report([results], n_boot=10, thumbnail_cache=False)
    with pytest.raises(Exception, match="would overwrite the samples file"):
        report.write(samples)
    assert samples.read_text() == "not json\n"


def test_report_over_an_image_or_any_other_file_but_a_page_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o out0.png (an image the report shows) was overwritten with the page, exit 0."""
    results = _results(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for out in (tmp_path / "out0.png", notes):
        before = out.read_bytes()
        assert _report(results, out, "--no-thumbnail-cache") == 2
        assert "holds something other than an HTML page" in _one_error_line(capsys)
        assert out.read_bytes() == before
    page, empty = tmp_path / "page.html", tmp_path / "empty.html"
    page.write_text(PAGE)
    empty.touch()
    for out in (page, empty):  # an earlier report, or an empty file, is replaced
        assert _report(results, out, "--no-thumbnail-cache") == 0
        assert out.read_text().lower().startswith("<!doctype html>") and out.read_text() != PAGE


def test_report_over_a_results_file_a_run_writes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path)
    before = results.read_bytes()
    fresh = tmp_path / "fresh.jsonl"  # a run just started: its file is still empty
    with ResultsLock(results), ResultsLock(fresh):
        assert _report(results, results, "--no-thumbnail-cache") == 2
        assert "would overwrite the results file" in _one_error_line(capsys)
        assert _report(results, fresh, "--no-thumbnail-cache") == 2
        assert "a run that is writing it" in _one_error_line(capsys)
    assert results.read_bytes() == before and not fresh.exists()


def test_report_replaces_a_link_at_its_path_and_leaves_the_target(tmp_path: Path) -> None:
    results = _results(tmp_path)
    victim = tmp_path / "shell.rc"
    victim.write_text("precious\n")
    out = tmp_path / "page.html"
    out.symlink_to(victim)
    assert _report(results, out, "--no-thumbnail-cache") == 0
    assert victim.read_text() == "precious\n"
    assert not out.is_symlink() and "<!doctype html>" in out.read_text().lower()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_failed_write_is_one_line_exit_2_and_keeps_the_old_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _results(tmp_path)
    out = tmp_path / "page.html"
    out.write_text(PAGE)
    import cigeval.report.output as output

    real_fdopen = output.os.fdopen

    class Full:  # the disk fills after the first part
        def __init__(self, handle: Any) -> None:
            self.handle, self.parts = handle, 0

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, data: bytes) -> None:
            self.parts += 1
            if self.parts > 1:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.handle.write(data)

    def fdopen(fd: int, mode: str = "r") -> Any:
        return Full(real_fdopen(fd, mode)) if "w" in mode else real_fdopen(fd, mode)

    monkeypatch.setattr(output.os, "fdopen", fdopen)
    assert _report(results, out, "--no-thumbnail-cache") == 2
    assert "No space left on device" in _one_error_line(capsys)
    assert out.read_text() == PAGE
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    monkeypatch.undo()
    # a folder that cannot be made (a file is in the way): one line too
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    assert _report(results, blocker / "page.html", "--no-thumbnail-cache") == 2
    assert "cannot write the report" in _one_error_line(capsys)


def _rows(folder: Path) -> list[tuple[str, bytes]]:
    with sqlite3.connect(folder / "cache.sqlite3") as connection:
        return connection.execute("SELECT key, value FROM entries ORDER BY key").fetchall()


def _set_row(folder: Path, key: str, value: bytes) -> None:
    with sqlite3.connect(folder / "cache.sqlite3") as connection:
        connection.execute("UPDATE entries SET value = ? WHERE key = ?", (value, key))


def test_corrupt_or_swapped_thumbnail_rows_are_remade_never_shown(tmp_path: Path) -> None:
    results = _results(tmp_path)
    cache = tmp_path / "thumbs"
    shown = build_report([results], n_boot=10, thumbnail_cache=cache).catalog.thumbnails
    rows = _rows(cache)
    assert len(rows) == 3
    (key_a, value_a), (key_b, value_b), (key_c, _) = rows
    _set_row(cache, key_a, value_b)  # another image's row, copied over
    _set_row(cache, key_b, b"\xff\xfe not a thumbnail")  # damaged bytes
    _set_row(cache, key_c, b"data:image/png;base64,iVBORw0KGgo=")  # a broken image
    again = build_report([results], n_boot=10, thumbnail_cache=cache)
    assert again.catalog.thumbnails == shown and not again.catalog.missing
    assert dict(_rows(cache))[key_a] == value_a  # remade and stored again
