"""One convention for every command (docs/cli.md): data on stdout; progress, what was written
and every diagnostic on stderr. Each command is run here and its two streams checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cigeval.cli import main
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("streams")


@pytest.fixture(scope="module")
def samples(folder: Path) -> Path:
    return write_jsonl(folder / "samples.jsonl", seven_task_samples(folder)[:3])


@pytest.fixture(scope="module")
def results(folder: Path, samples: Path) -> Path:
    out = folder / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, "--cache-dir", str(folder / "cache")) == 0
    return out


def _streams(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> tuple[str, str]:
    capsys.readouterr()
    assert main(list(argv)) == status
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_evaluate_prints_nothing_on_stdout_and_its_progress_and_summary_on_stderr(
    folder: Path, samples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = folder / "evaluated.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        argv = ["evaluate", str(samples), "--model", "openai:judge", "--base-url"]
        argv += [server.base_url, "--out", str(out_file), "--no-preflight", "--no-cache"]
        out, err = _streams(capsys, *argv)  # with the progress bar
    assert out == ""
    assert "3/3" in err  # the bar
    assert "samples: 3 evaluated (3 ok, 0 error)" in err
    assert err.rstrip().endswith(f"wrote 3 record(s) to {out_file}")


def test_tasks_and_rubrics_print_their_lists_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    out, err = _streams(capsys, "tasks")
    assert out.startswith("text_guided_ig: ") and err == ""
    out, err = _streams(capsys, "rubrics")
    assert "cigeval: " in out and err == ""


def test_validate_prints_its_report_on_stdout(
    samples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = _streams(capsys, "validate", str(samples))
    assert out.splitlines()[-1].startswith("3 valid, 0 invalid sample(s)") and err == ""


def test_report_says_on_stderr_what_it_wrote(
    folder: Path, results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = folder / "report.html"
    out, err = _streams(capsys, "report", str(results), "-o", str(page), "--bootstrap", "10")
    assert out == "" and f"wrote {page} (" in err and "3 samples" in err
    assert page.is_file()


def test_meta_tables_on_stdout_and_written_files_on_stderr(
    folder: Path, results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = _streams(capsys, "meta", "imagenhub", "--human", "--round", "4", "--json")
    assert json.loads(out)["average"] == 0.47 and err == ""
    split = folder / "split.json"
    out, err = _streams(capsys, "meta", "split", "--from", str(results), "--out", str(split))
    assert out == "" and err.startswith(f"cigeval meta: wrote {split}: ") and split.is_file()
    exported = folder / "train.jsonl"
    out, err = _streams(capsys, "meta", "export-trajectories", str(results), "--out", str(exported))
    assert out == "" and "conversations from 3 samples (3 records read) to" in err
    assert exported.is_file()


def test_usage_errors_go_to_stderr_with_one_prefix(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = _streams(capsys, "validate", str(folder / "absent.jsonl"), status=2)
    assert out == ""
    assert err == f"cigeval validate: error: samples file not found: {folder / 'absent.jsonl'}\n"
