"""Issue 31, replayed: nothing a typo, a file or a server can do destroys an input, writes
outside the results, or reaches the terminal raw."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.redact import redact_command
from cigeval.results import ResultsLock, ResultsLocked, read_records
from cigeval.results.jsonl import overwritten_path, rejected_path
from cigeval.results.lock import lock_path
from cigeval.sample import iter_samples_file
from cigeval.terminal import safe_text
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, variant, write_jsonl
from tests.cli_support import evaluate_cli

TOOLS = ("--tools", "Difference")
#: A character that acts on a terminal: C0 controls but tab and newline, DEL, C1 controls.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def samples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path))


def records_by_id(out: Path) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in read_records(out)}


# --- the results path is never an input -----------------------------------------------------


@pytest.mark.parametrize("flags", [(), ("--overwrite",), ("--allow-mixed-settings",)])
@pytest.mark.parametrize("name", ["the same name", "a symlink"])
def test_out_naming_the_samples_file_is_refused_and_the_file_kept(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: Any, name: str
) -> None:
    before = samples.read_bytes()
    out = samples
    if name == "a symlink":
        out = tmp_path / "results.jsonl"
        out.symlink_to(samples)
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, *flags) == 2
        assert not server.requests
    assert samples.read_bytes() == before
    err = capsys.readouterr().err
    assert f"the results file ({out}) would be the samples file {samples}" in err
    assert not lock_path(samples).exists()


def test_out_whose_side_file_is_the_samples_file_is_refused(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --out x.jsonl writes x.jsonl.rejected: here that name is the samples file
    moved = samples.rename(tmp_path / "res.jsonl.rejected")
    before = moved.read_bytes()
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, moved, tmp_path / "res.jsonl", *TOOLS) == 2
    assert moved.read_bytes() == before
    assert "its rejected lines" in capsys.readouterr().err


def test_out_naming_a_plugin_file_is_refused(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = tmp_path / "plug.py"
    plugin.write_text("VALUE = 1\n")
    with FakeOpenAIServer(rule_judge()) as server:
        code = evaluate_cli(server, samples, plugin, *TOOLS, "--plugin", str(plugin))
    assert code == 2
    assert plugin.read_text() == "VALUE = 1\n"
    assert "the plugin" in capsys.readouterr().err


def test_overwrite_moves_old_results_aside_until_the_run_ends(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, "--limit", "2") == 0
        old = out.read_bytes()
        seen: list[bytes] = []
        real_judge = __import__("cigeval.engines.local", fromlist=["LocalEngine"]).LocalEngine.judge

        def judge(self: Any, *args: Any, **kwargs: Any) -> None:
            seen.append(overwritten_path(out).read_bytes())  # the old file, whole, meanwhile
            real_judge(self, *args, **kwargs)

        monkeypatch.setattr("cigeval.engines.local.LocalEngine.judge", judge)
        assert evaluate_cli(server, samples, out, *TOOLS, "--overwrite") == 0
    assert seen == [old]
    assert not overwritten_path(out).exists()
    assert len(records_by_id(out)) == 7


def test_overwrite_refuses_a_file_that_is_not_results(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"id": "x", "task": "t"}\n')
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, notes, *TOOLS, "--overwrite") == 2
        assert not server.requests
    assert notes.read_text() == '{"id": "x", "task": "t"}\n'
    assert "does not look like results" in capsys.readouterr().err


# --- the samples file is one snapshot -------------------------------------------------------


def test_a_samples_file_rewritten_during_the_run_stops_it_unmixed(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = seven_task_samples(tmp_path)
    old = [variant(base[2], f"old{i}", f"old {i}") for i in range(30)]
    new = [variant(base[2], f"new{i}", f"new {i}") for i in range(30)]
    write_jsonl(samples, old)
    judge = rule_judge()
    rewritten: list[bool] = []

    def reply(request: Any) -> str:
        if not rewritten:
            rewritten.append(True)
            write_jsonl(samples, new)  # a pipeline regenerating the file
        return judge(request)

    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(reply) as server:
        code = evaluate_cli(server, samples, out, *TOOLS, "--concurrency", "2")
    assert code == 2
    ids = set(records_by_id(out))
    assert ids and ids <= {s["id"] for s in old}  # nothing from the new file
    assert len(ids) < 30  # it stopped rather than reading on
    err = capsys.readouterr().err
    assert f"the samples file {samples} changed while the run read it" in err


def test_records_name_the_samples_file_snapshot(samples: Path, tmp_path: Path) -> None:
    import hashlib

    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, "--limit", "1") == 0
    (record,) = read_records(out)
    snapshot = record["provenance"]["samples_file"]
    assert snapshot["sha256"] == hashlib.sha256(samples.read_bytes()).hexdigest()
    assert snapshot["size"] == samples.stat().st_size and snapshot["path"] == str(samples)


def test_an_empty_samples_file_is_exit_1_and_a_directory_is_called_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, empty, tmp_path / "a.jsonl", *TOOLS) == 1
        assert "holds no samples (it is empty)" in capsys.readouterr().err
        assert evaluate_cli(server, tmp_path, tmp_path / "b.jsonl", *TOOLS) == 2
        assert f"{tmp_path} is a directory, not a samples file" in capsys.readouterr().err
    assert main(["validate", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


# --- files next to the results: no links followed, no credentials ---------------------------


def test_a_link_planted_at_the_lock_leaves_its_target_alone(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out.jsonl"
    lock_path(out).symlink_to(victim)
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS) == 2
        assert not server.requests
    assert victim.read_text() == "precious\n"
    assert "is a symbolic link" in capsys.readouterr().err


def test_a_link_planted_at_the_rejected_file_leaves_its_target_alone(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "t2i", "status": "ok"}\nnot json\n{"id": "mie", "sta')  # to move aside
    rejected_path(out).symlink_to(victim)
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, "--allow-mixed-settings") == 2
    assert victim.read_text() == "precious\n"
    assert "is a symbolic link" in capsys.readouterr().err


def test_the_lock_is_private_and_holds_no_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = [
        "cigeval",
        "evaluate",
        "s.jsonl",
        "--base-url",
        "http://user:KEY1@host:8000/v1?api_key=KEY2&page=3",
        "--model",
        "openai:m@https://h/v1?token=KEY3",
        "--api-key",
        "KEY4",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    out = tmp_path / "out.jsonl"
    with ResultsLock(out):
        text = lock_path(out).read_text()
        assert stat.S_IMODE(lock_path(out).stat().st_mode) == 0o600
        with pytest.raises(ResultsLocked) as refused:
            ResultsLock(tmp_path / "out.jsonl").acquire()
    assert "KEY" not in text and "KEY" not in str(refused.value)
    holder = json.loads(text)
    assert holder["pid"] == os.getpid() and holder["host"] and holder["started"]
    assert "http://***@host:8000/v1?api_key=***&page=3" in holder["command"]
    assert not lock_path(out).exists()


def test_redact_command_keeps_what_is_not_a_credential() -> None:
    shown = redact_command(["--max-tokens", "100", "--monkey=1", "https://h/?keyword=a&key=b"])
    assert shown == "--max-tokens 100 --monkey=1 https://h/?keyword=a&key=***"


def test_sigterm_before_the_judging_removes_the_lock(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"

    def prepare(self: Any, quiet: bool) -> None:
        assert lock_path(out).exists()
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr("cigeval.engines.local.LocalEngine.prepare", prepare)
    before = signal.getsignal(signal.SIGTERM)  # SIG_DFL, or what an earlier test left (Ray's)
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS) == 143
    assert not lock_path(out).exists()
    assert signal.getsignal(signal.SIGTERM) is before


# --- ids ------------------------------------------------------------------------------------


def test_a_valid_sample_with_id_line_1_is_judged_and_ids_must_be_strings(
    samples: Path, tmp_path: Path
) -> None:
    good = seven_task_samples(tmp_path)[2]
    lines = [
        "{broken\n",
        json.dumps(variant(good, "line:1", "a")) + "\n",
        json.dumps(variant(good, "True", "b")) + "\n",
        json.dumps({**variant(good, "x", "c"), "id": True}) + "\n",
        json.dumps(variant(good, "@line:9", "d")) + "\n",
    ]
    samples.write_text("".join(lines))
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS) == 1
    records = records_by_id(out)
    assert records["line:1"]["status"] == "ok" and records["True"]["status"] == "ok"
    assert "invalid JSON" in records["@line:1"]["error"]
    assert "id must be a string (in quotes), got a boolean true" in records["@line:4"]["error"]
    assert "starts with '@line:'" in records["@line:5"]["error"]
    assert len(records) == 5


# --- nothing raw on the terminal ------------------------------------------------------------


def test_no_raw_control_character_reaches_stdout_or_stderr(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = seven_task_samples(tmp_path)[2]
    title = "\x1b]0;owned\x07"
    fake = "\x1b[2J\rall 100 samples ok\n"
    lines = [
        {**variant(good, f"a{title}", "a"), "images": {"source": "nope\x00.png", "output": "x"}},
        {**variant(good, f"b{fake}", "b"), "images": {"output": f"{fake}.png", "source": "y"}},
        variant(good, f"c\x9b31m{title}", "c"),
        variant(good, f"c\x9b31m{title}", "c again"),  # a repeat: warned about
    ]
    write_jsonl(samples, lines)
    with FakeOpenAIServer(rule_judge()) as server:
        code = evaluate_cli(server, samples, tmp_path / "out.jsonl", *TOOLS)
        assert code == 1
        assert main(["validate", str(samples)]) == 1
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert not RAW_CONTROL.search(stream), stream
    assert "\\x1b]0;owned\\x07" in captured.err and "\\x1b[2J\\x0dall 100" in captured.err
    assert "\nall 100 samples ok" not in captured.err


def test_safe_text_escapes_controls_and_keeps_laid_out_lines() -> None:
    assert safe_text("a\x1b[2Jb\x00\n\u202e") == "a\\x1b[2Jb\\x00\\n\\u202e"
    assert safe_text("line 1\n\tline 2\r", lines=True) == "line 1\n\tline 2\\x0d"
    assert safe_text("\ud800ok") == "\ufffdok"


def test_iter_samples_file_gives_bool_ids_a_line_id(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"id": true, "task": "text_guided_ig"}\n{"id": "@line:3"}\n')
    first, second = iter_samples_file(path)
    assert first.sample_id == "@line:1" and second.sample_id == "@line:2"


# --- ambiguous replies ----------------------------------------------------------------------


@pytest.mark.parametrize("times", [1, 100])
def test_an_ambiguous_reply_is_asked_again_then_an_error(
    samples: Path, tmp_path: Path, times: int
) -> None:
    judge = rule_judge()
    ambiguous: list[int] = []

    def reply(request: Any) -> str:
        text = judge(request)
        if '"score"' in text and len(ambiguous) < times:
            ambiguous.append(1)
            return text[:-1] + ', "score": 1}'  # {"score": 7, ..., "score": 1}
        return text

    write_jsonl(samples, seven_task_samples(tmp_path)[2:3])
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(reply) as server:
        # the strict reading (the official one takes the last of two "score" keys)
        strict = ("--reply-parsing", "strict")
        code = evaluate_cli(server, samples, out, *TOOLS, "--concurrency", "1", *strict)
    (record,) = read_records(out)
    if times == 1:
        assert code == 0 and record["status"] == "ok" and record["score"] == pytest.approx(0.7)
    else:
        assert code == 1 and record["status"] == "error"
        assert "repeats the key 'score' with different values" in record["error"]


# --- resume notices changed inputs ----------------------------------------------------------


def test_an_image_changed_between_runs_is_judged_again(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cigeval.testing.samples_factory import make_image

    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
        first = records_by_id(out)
        assert first["t2i"]["provenance"]["image_files"]["output"]
        assert first["mcic"]["provenance"]["image_files"]["subjects[1]"]
        calls = len(server.requests)
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
        assert len(server.requests) == calls  # nothing changed: nothing asked
        make_image(tmp_path / "subject2.png", "white", (1, 1, 60, 60), "black")  # replaced
        capsys.readouterr()
        assert evaluate_cli(server, samples, out, *TOOLS, "--no-recheck-images") == 0
        assert len(server.requests) == calls
        assert "7 sample(s) kept from" in capsys.readouterr().err
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
        assert len(server.requests) > calls
    err = capsys.readouterr().err
    assert "sample 'mcic': image(s) subjects[1] changed since it was judged" in err
    lines = list(read_records(out))
    assert [r["id"] for r in lines].count("mcic") == 2 and len(lines) == 8
    new = records_by_id(out)["mcic"]["provenance"]["image_files"]["subjects[1]"]
    assert new != first["mcic"]["provenance"]["image_files"]["subjects[1]"]


def test_a_runaway_text_is_that_samples_error(samples: Path, tmp_path: Path) -> None:
    good = seven_task_samples(tmp_path)[2]
    long = {**variant(good, "long", "x"), "instruction": "make it red " * 500}
    write_jsonl(samples, [long, variant(good, "short", "y")])
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, "--max-text-chars", "1000") == 1
        assert all("make it red make it red" not in str(r.body) for r in server.requests)
    records = records_by_id(out)
    assert records["short"]["status"] == "ok"
    assert records["long"]["error"] == (
        "sample 'long': instruction has 6000 characters, more than --max-text-chars 1000: "
        "refused rather than sent to the judge (raise --max-text-chars to judge it)"
    )


def test_no_credential_in_a_message_or_a_file_next_to_the_results(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    url = f"http://user:KEYSECRET@127.0.0.1:{port}/v1?api_key=KEYSECRET"
    out = tmp_path / "out.jsonl"
    argv = ["evaluate", str(samples), "--model", "openai:m", "--base-url", url]
    assert main([*argv, "--out", str(out), "--quiet", *TOOLS]) == 2
    captured = capsys.readouterr()
    assert "cannot be reached" in captured.err
    assert "KEYSECRET" not in captured.err + captured.out
    assert not any("KEYSECRET" in p.read_text(errors="replace") for p in tmp_path.glob("out*"))


def test_redact_credentials_in_a_message() -> None:
    from cigeval.redact import redact_credentials

    message = "POST https://a:b@h/v1?key=K&x=1 failed; see http://h/?token=T#frag"
    assert redact_credentials(message) == (
        "POST https://***@h/v1?key=***&x=1 failed; see http://h/?token=***#frag"
    )


def test_an_image_missing_then_supplied_is_judged_again_and_its_old_error_forgotten(
    samples: Path, tmp_path: Path
) -> None:
    from cigeval.testing.samples_factory import make_image

    good = seven_task_samples(tmp_path)[0]  # t2i: one output image
    write_jsonl(samples, [{**good, "images": {"output": "later.png"}}])
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS) == 1
        assert evaluate_cli(server, samples, out, *TOOLS) == 1  # still missing: kept
        assert len(list(read_records(out))) == 1
        make_image(tmp_path / "later.png", "white", (10, 10, 30, 30), "red")
        assert evaluate_cli(server, samples, out, *TOOLS) == 0
    assert records_by_id(out)["t2i"]["status"] == "ok"
