"""``cigeval probe`` against an OpenAI-compatible test server: the report, the gate, drift."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.tasks.ids import TASK_IDS
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.probe_judges import probe_judge

SEVEN = list(TASK_IDS)


def probe_cli(
    server: FakeOpenAIServer,
    out: Path,
    *extra: str,
    model: str = "openai:judge",
    preflight: bool = False,
) -> int:
    """``cigeval probe --model MODEL --base-url SERVER --out OUT --quiet EXTRA...``.

    ``--no-preflight`` is added unless ``preflight``: the default tools include Grounding,
    whose weights are not on this machine.
    """
    argv = ["probe", "--model", model, "--base-url", server.base_url, "--out", str(out)]
    return main([*argv, "--quiet", *([] if preflight else ["--no-preflight"]), *extra])


@dataclass
class Run:
    """A finished probe run: exit status, report, printed text, the server it asked."""

    status: int
    report: dict[str, Any]
    stdout: str
    stderr: str
    server: FakeOpenAIServer
    out: Path
    port: int = 0


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("probe_cli")


def _run(
    capsys: pytest.CaptureFixture[str], reply: Any, out: Path, *extra: str, port: int = 0
) -> Run:
    with FakeOpenAIServer(reply, port=port) as server:
        status = probe_cli(server, out, *extra)
        port = _port(server)
    captured = capsys.readouterr()
    report = json.loads(out.read_text()) if out.exists() else {}
    return Run(status, report, captured.out, captured.err, server, out, port)


def _port(server: FakeOpenAIServer) -> int:
    return int(server.base_url.rsplit(":", 1)[1].split("/")[0])


def _quiet_run(reply: Any, out: Path, *extra: str) -> Run:
    """A probe run whose printed output is kept (for module-scoped fixtures)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        FakeOpenAIServer(reply) as server,
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        status = probe_cli(server, out, *extra)
        port = _port(server)
    report = json.loads(out.read_text())
    return Run(status, report, stdout.getvalue(), stderr.getvalue(), server, out, port)


@pytest.fixture(scope="module")
def seeing_run(workdir: Path) -> Run:
    """The seeing judge through the CLI, all tasks and kinds, with a response cache."""
    cache = str(workdir / "cache")
    return _quiet_run(
        probe_judge(), workdir / "seeing.json", "--cache-dir", cache, "--min-pass-rate", "0.95"
    )


@pytest.fixture(scope="module")
def blind_run(workdir: Path) -> Run:
    """cigeval.rule_judge (constant scores, never reads an image) with a 0.75 gate."""
    return _quiet_run(rule_judge(), workdir / "blind.json", "--min-pass-rate", "0.75")


def test_the_report_covers_all_seven_tasks_and_every_kind(seeing_run: Run) -> None:
    report = seeing_run.report
    assert seeing_run.status == 0
    assert report["format"] == "cigeval-probe-report" and report["version"] == 1
    assert report["judge"] == "openai:judge" and report["rubric"] == "cigeval"
    assert report["pass_rate"] == 1.0 and report["total"] == 48
    assert list(report["by_task"]) == SEVEN
    assert len(report["by_kind"]) == 9
    assert report["by_task"]["multi_concept_ic"] == {
        "passed": 7,
        "failed": 0,
        "errors": 0,
        "total": 7,
        "pass_rate": 1.0,
    }
    blank = next(p for p in report["probes"] if p["id"] == "control_guided_ig/blank_output")
    assert blank["passed"] is True and blank["expected"] == "score must drop"
    assert blank["reference"]["score"] == 1.0 and blank["probe"]["score"] == 0.0
    assert blank["reference"]["reasoning"]["control_following"]
    assert blank["checks"][0]["delta"] == -1.0
    assert set(report["settings"]) == {"drop_margin", "hold_tolerance", "min_spread"}


def test_files_next_to_the_report_and_what_the_server_saw(seeing_run: Run) -> None:
    out = seeing_run.out
    probe_set = out.with_name("seeing.probe-set")
    assert (probe_set / "samples.jsonl").is_file()
    assert (probe_set / "text_guided_ie" / "jpeg_reencode_output.jpg").is_file()
    records = [json.loads(line) for line in out.with_name("seeing.records.jsonl").open()]
    assert len(records) == 48  # 41 samples, plus each task's reference asked again
    assert sum(r["id"] == "text_guided_ie/reference" for r in records) == 2
    assert all(r["status"] == "ok" and r["judge"] == "openai:judge" for r in records)
    urls = [u for r in seeing_run.server.requests for u in r.image_urls()]
    assert any(u.startswith("data:image/jpeg;base64,") for u in urls)  # the JPEG probe
    for task in SEVEN:
        assert task in seeing_run.stdout
    assert "48/48 passed (100.0%)" in seeing_run.stdout


def test_a_judge_that_ignores_the_images_fails_the_gate(blind_run: Run) -> None:
    run = blind_run
    assert run.status == 1
    assert run.report["pass_rate"] <= 0.75 and run.report["passed"] == 21
    assert "below --min-pass-rate 0.75" in run.stderr
    assert "FAIL" in run.stdout and "score must drop: 0.70 -> 0.70" in run.stdout
    failed_kinds = {p["kind"] for p in run.report["probes"] if not p["passed"]}
    assert failed_kinds == {
        "blank_output",
        "unchanged_source",
        "wrong_output",
        "wrong_subject",
        "ignored_control",
        "spread",
    }


def test_compare_two_stored_reports(
    seeing_run: Run, blind_run: Run, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blind = blind_run.out
    drift_file = workdir / "drift.json"
    compare = ["--compare", str(seeing_run.out), str(blind)]
    status = main(["probe", *compare, "--out", str(drift_file), "--fail-on-drift"])
    printed, diagnostics = capsys.readouterr()
    assert status == 1
    assert diagnostics == f"wrote the drift between the two reports to {drift_file}\n"
    drift = json.loads(drift_file.read_text())
    assert drift["changed"] is True
    assert drift["pass_rate"] == {"old": 1.0, "new": 21 / 48}
    assert len(drift["status_changes"]) == 27 and drift["changed_inputs"] == []
    assert drift["max_score_change"] == pytest.approx(0.7)
    assert "CHANGED" in printed and "pass rate 100.0% -> 43.8%" in printed
    same = main(["probe", "--compare", str(seeing_run.out), str(seeing_run.out), "--fail-on-drift"])
    assert same == 0 and "no change beyond the tolerance" in capsys.readouterr().out


def test_a_changed_model_under_the_same_name(
    seeing_run: Run, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = ("--cache-dir", str(workdir / "cache"))
    # The new model answers at the first one's address (the cache key covers the server, so a
    # model at another address is asked afresh). With the cache of the first run, only the
    # repeat probes reach the new model ...
    port = seeing_run.port
    cached = _run(capsys, rule_judge(), workdir / "cached.json", *cache, port=port)
    assert cached.status == 0
    failed = {p["kind"] for p in cached.report["probes"] if not p["passed"]}
    assert failed == {"repeat"}
    # ... while --compare asks everything afresh and reports the drift.
    compared = _run(
        capsys,
        rule_judge(),
        workdir / "compared.json",
        *cache,
        "--compare",
        str(seeing_run.out),
        "--fail-on-drift",
        port=port,
    )
    assert compared.status == 1
    assert compared.report["pass_rate"] == 21 / 48
    assert compared.report["drift"]["changed"] is True
    assert "asked afresh" in compared.stderr and "Drift since" in compared.stdout


def test_probe_runs_the_preflight_before_any_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(probe_judge(), served_models=["another-model"]) as server:
        out = tmp_path / "probe.json"
        status = probe_cli(server, out, "--tools", "Difference", preflight=True)
        assert not server.requests  # no probe sample reached the judge
    assert status == 2
    err = capsys.readouterr().err
    assert "preflight failed" in err and "another-model" in err
    assert not out.exists()


def test_viescore_with_an_ensemble_of_two_models(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(probe_judge()) as server:
        argv = ["probe", "--model", "openai:judge-a", "--model", "openai:judge-b"]
        argv += ["--base-url", server.base_url, "--out", str(workdir / "ensemble.json")]
        argv += ["--rubric", "viescore", "--tasks", "text_guided_ie,subject_driven_ig", "--quiet"]
        argv += ["--kinds", "blank_output,unchanged_source,wrong_subject,spread", "--no-preflight"]
        status = main(argv)
    report = json.loads((workdir / "ensemble.json").read_text())
    assert status == 0
    assert report["judge"] == "openai:judge-a,openai:judge-b"
    assert report["config"]["ensemble"]["combine"] == "mean"
    assert [p["id"] for p in report["probes"]] == [
        "text_guided_ie/blank_output",
        "text_guided_ie/unchanged_source",
        "text_guided_ie/spread",
        "subject_driven_ig/blank_output",
        "subject_driven_ig/wrong_subject",
        "subject_driven_ig/spread",
    ]
    assert report["pass_rate"] == 1.0
    models = {r.body["model"] for r in server.requests}
    assert models == {"judge-a", "judge-b"}


def test_a_factor_rubric_runs_where_its_inputs_fit(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(capsys, probe_judge(), workdir / "fidelity.json", "--rubric", "instruction_fidelity")
    assert run.status == 0
    assert list(run.report["by_task"]) == ["mask_guided_ie", "text_guided_ie"]
    assert run.report["pass_rate"] == 1.0 and run.report["total"] == 14
    assert len(run.report["skipped"]) == 48 - 14
    nothing = _run(
        capsys,
        probe_judge(),
        workdir / "nothing.json",
        "--rubric",
        "instruction_fidelity",
        "--tasks",
        "text_guided_ig",
    )
    assert nothing.status == 2 and "no probe applies to this judge" in nothing.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["probe", "--out", "x.json"], "--model is required"),
        (["probe", "--model", "openai:m"], "--out is required"),
        (["probe", "--model", "openai:m", "--out", "x.json", "--tasks", "nope"], "no probe task"),
        (["probe", "--model", "openai:m", "--out", "x.json", "--kinds", "nope"], "no probe kind"),
        (["probe", "--compare", "a", "b", "c"], "one stored report"),
        (["probe", "--compare", "missing.json", "x.json"], "probe report not found"),
        (["probe", "--model", "m", "--out", "x.json", "--fail-on-drift"], "needs --compare"),
        (["probe", "--model", "m", "--out", "x.json", "--min-pass-rate", "2"], "between 0 and 1"),
        (["probe", "--model", "m", "--out", "x.json", "--drop-margin", "-1"], "--drop-margin"),
    ],
)
def test_usage_errors(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_compare_reads_only_probe_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"id": "1"}))
    assert main(["probe", "--compare", str(other), str(other)]) == 2
    assert "is not a cigeval probe report" in capsys.readouterr().err


def test_a_judge_that_cannot_be_reached_is_named_as_never_asked(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(rule_judge()) as server:
        gone = server.base_url
    out = workdir / "unreachable.json"
    argv = ["probe", "--model", "openai:judge", "--base-url", gone, "--out", str(out)]
    flags = ["--tasks", "text_guided_ig", "--kinds", "blank_output", "--max-retries", "0"]
    assert main([*argv, "--quiet", "--no-preflight", *flags]) == 1
    stderr = capsys.readouterr().err
    assert "every probe ended in error: the judge could not be asked" in stderr
    assert "connection failed" in stderr


def test_a_judge_that_never_answers_usably_exits_1(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(
        capsys,
        lambda body: "I cannot help with that.",
        workdir / "broken.json",
        "--tasks",
        "text_guided_ig",
        "--kinds",
        "blank_output,spread",
        "--max-parse-retries",
        "0",
    )
    assert run.status == 1
    assert (run.report["errors"], run.report["total"], run.report["pass_rate"]) == (2, 2, 0.0)
    # it was asked, and answered: the message says so, quotes the reply and hints at no limit
    asked = len(run.server.requests)
    assert asked > 0
    assert (
        f"every probe ended in error: the judge answered {asked} times, none usable: "
        '"I cannot help with that."'
    ) in run.stderr
    assert "could not be asked" not in run.stderr and "max-tokens" not in run.stderr
    assert "reference sample text_guided_ig/reference" in run.report["probes"][0]["error"]
    assert "err" in run.stdout


def test_the_table_goes_to_stdout_and_what_was_written_to_stderr(seeing_run: Run) -> None:
    out = seeing_run.out
    assert seeing_run.stdout.startswith("Probes of judge openai:judge (rubric cigeval): ")
    total = seeing_run.report["total"]
    records = out.with_name(out.stem + ".records.jsonl")
    written = len(records.read_text().splitlines())
    assert (
        f"wrote the probe report ({total} probes) to {out}, {written} record(s) to {records}; "
        f"the probe set is in {out.with_name(out.stem + '.probe-set')}"
    ) in seeing_run.stderr
    assert "Probes of judge" not in seeing_run.stderr
