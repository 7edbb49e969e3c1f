"""Tracked runs: ``--track wandb`` leaves the summary, the records table (with images) and the
report in an offline W&B run folder; ``--track mlflow`` leaves them in an MLflow file store;
``cigeval probe --track`` logs the probe report. Nothing leaves this machine: W&B runs in
offline mode in a temporary folder, MLflow writes a plain file store.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.results.jsonl import read_records
from cigeval.stats import bootstrap_mean_interval
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.probe_judges import probe_judge
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl

TOOLS = ("--tools", "Difference,Scene Graph")


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    """The seven tasks twice, by two generators, with different scores per generator."""
    rows = []
    for generator in ("painter", "sketcher"):
        for row in seven_task_samples(tmp_path / "images"):
            rows.append({**row, "id": f"{generator}-{row['id']}", "model": generator})
    return write_jsonl(tmp_path / "images" / "samples.jsonl", rows)


def evaluate(server: FakeOpenAIServer, samples: Path, out: Path, *extra: str) -> int:
    argv = ["evaluate", str(samples), "--model", f"openai:judge@{server.base_url}"]
    return main([*argv, "--out", str(out), "--quiet", "--no-cache", *TOOLS, *extra])


@pytest.fixture
def wandb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("wandb", reason="the wandb extra is not installed")
    root = tmp_path / "wandb-home"
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name, sub in (("DIR", ""), ("CACHE_DIR", "cache"), ("CONFIG_DIR", "config")):
        monkeypatch.setenv(f"WANDB_{name}", str(root / sub))
    monkeypatch.setenv("WANDB_DATA_DIR", str(root / "data"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    return root


@pytest.fixture
def mlflow_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    store = tmp_path / "mlruns"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file:{store}")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 wants a database otherwise
    return store


def expected_cell(records: list[dict[str, Any]]) -> dict[str, float]:
    scores = [r["score"] for r in records if r["status"] == "ok"]
    low, high = bootstrap_mean_interval(scores, 1000, 0.95, 0)
    return {"mean": sum(scores) / len(scores), "low": low, "high": high, "n": len(scores)}


def test_wandb_offline_run_folder_holds_summary_table_images_and_report(
    samples: Path, tmp_path: Path, wandb_env: Path
) -> None:
    out = tmp_path / "results.jsonl"
    with FakeOpenAIServer(rule_judge(scores={"edit_success": 3}, default_score=8)) as server:
        status = evaluate(server, samples, out, "--track", "wandb", "--track-project", "study")
    assert status == 0
    records = list(read_records(out))
    (run_dir,) = (wandb_env / "wandb").glob("offline-run-*")
    files = run_dir / "files"
    summary = json.loads((files / "cigeval-summary.json").read_text())
    assert summary["ok"] == 14 and summary["error"] == 0
    figures = summary["figures"]
    edits = [r for r in records if r["task"] == "text_guided_ie"]
    for name, value in expected_cell(edits).items():
        assert figures[f"task/text_guided_ie/{name}"] == pytest.approx(value)
    painter = [r for r in records if r["model"] == "painter"]
    assert figures["generator/painter/mean"] == pytest.approx(expected_cell(painter)["mean"])
    assert figures["generator/painter/text_guided_ie/n"] == 1
    log = next(run_dir.glob("*.wandb")).read_bytes()
    for key in ("task/text_guided_ie/mean", "generator/sketcher/low", "score/high"):
        assert key.encode() in log  # in the run's summary, as W&B will show it
    assert records[0]["fingerprint"].encode() in log  # in the run's config
    (table,) = (files / "media" / "table").glob("records_*.table.json")
    data = json.loads(table.read_text())
    assert data["columns"][:5] == ["id", "task", "generator", "status", "score"]
    assert "output" in data["columns"] and "source" in data["columns"]
    assert sorted(row[0] for row in data["data"]) == sorted(r["id"] for r in records)
    staged = [p.read_bytes() for p in (wandb_env / "data").rglob("*") if p.is_file()]
    first = records[0]
    seen = Path(first["image_files"][first["input_images"]["output"]]).read_bytes()
    assert seen in staged  # the image the judge saw (as the method encodes it), in the table
    report = (files / "cigeval-report.html").read_text()
    assert "painter-tie" in report and "sketcher-cgig" in report
    assert list((files / "media" / "html").glob("report_*.html"))
    assert (files / "cigeval-results.jsonl").read_bytes() == out.read_bytes()


def test_mlflow_file_store_holds_params_metrics_table_and_report(
    samples: Path, tmp_path: Path, mlflow_store: Path
) -> None:
    from mlflow.tracking import MlflowClient

    out = tmp_path / "results.jsonl"
    with FakeOpenAIServer(rule_judge(scores={"over_editing": 4})) as server:
        status = evaluate(server, samples, out, "--track", "mlflow", "--track-name", "first")
    assert status == 0
    records = list(read_records(out))
    client = MlflowClient()
    experiment = client.get_experiment_by_name("cigeval")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "first" and run.info.status == "FINISHED"
    assert run.data.tags["cigeval.fingerprint"] == records[0]["fingerprint"]
    assert run.data.params["eval.rubric"] == "cigeval"
    assert run.data.params["eval.aggregate"] == "min"
    assert run.data.metrics["run/ok"] == 14
    edits = [r for r in records if r["task"] == "text_guided_ie"]
    for name, value in expected_cell(edits).items():
        assert run.data.metrics[f"task/text_guided_ie/{name}"] == pytest.approx(value)
    artifacts = Path(run.info.artifact_uri.removeprefix("file://"))
    table = json.loads((artifacts / "records.json").read_text())
    assert sorted(row[0] for row in table["data"]) == sorted(r["id"] for r in records)
    assert (artifacts / "results" / "results.jsonl").read_bytes() == out.read_bytes()
    assert "painter-tie" in (artifacts / "report" / "results.report.html").read_text()
    assert json.loads((artifacts / "summary.json").read_text())["figures"]["run/ok"] == 14


def test_track_in_python_and_a_probe_report(
    samples: Path, tmp_path: Path, mlflow_store: Path
) -> None:
    from mlflow.tracking import MlflowClient

    import cigeval
    from cigeval.tracking import make_tracker

    out = tmp_path / "python.jsonl"
    judge_backend = cigeval.ScriptedBackend(rule_judge())
    tracker = make_tracker("mlflow", project="from-python", report=False)
    result = cigeval.Evaluator(judge_backend, tools=()).run(
        samples, out=out, track=tracker, quiet=True
    )
    assert result.ok
    client = MlflowClient()
    (run,) = client.search_runs([client.get_experiment_by_name("from-python").experiment_id])
    assert run.data.metrics["run/ok"] == 14 and run.data.params["options.overwrite"] == "False"

    probes = tmp_path / "probes.json"
    with FakeOpenAIServer(probe_judge()) as server:
        argv = ["probe", "--model", f"openai:judge@{server.base_url}", "--out", str(probes)]
        argv += ["--tasks", "text_guided_ie", "--no-preflight", "--quiet", "--no-cache"]
        assert main([*argv, "--track", "mlflow", "--track-project", "probes"]) == 0
    report = json.loads(probes.read_text())
    (probe_run,) = client.search_runs([client.get_experiment_by_name("probes").experiment_id])
    assert probe_run.data.tags["cigeval.job"] == "probe"
    assert probe_run.data.metrics["probe/pass_rate"] == pytest.approx(report["pass_rate"])
    assert probe_run.data.metrics["probe/task/text_guided_ie/passed"] == report["passed"]
    artifacts = Path(probe_run.info.artifact_uri.removeprefix("file://"))
    assert json.loads((artifacts / "probe-report" / "probes.json").read_text()) == report


def test_a_tracker_that_cannot_work_stops_the_run_before_any_sample(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file:{tmp_path / 'refused'}")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb fails
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate(server, samples, tmp_path / "a.jsonl", "--track", "mlflow") == 2
        assert "MLflow cannot use the tracking store" in capsys.readouterr().err
        assert evaluate(server, samples, tmp_path / "b.jsonl", "--track", "wandb") == 2
        assert "pip install 'cigeval[wandb]'" in capsys.readouterr().err
        assert not server.requests


def test_a_failure_while_logging_keeps_the_run_and_its_exit_status(
    samples: Path, tmp_path: Path, mlflow_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from cigeval.tracking import mlflow_tracker

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the tracking server went away")

    monkeypatch.setattr(mlflow_tracker._MlflowRun, "log_table", broken)
    out = tmp_path / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate(server, samples, out, "--track", "mlflow") == 0
    assert "the tracking server went away" in capsys.readouterr().err
    assert len(list(read_records(out))) == 14
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    (run,) = client.search_runs([client.get_experiment_by_name("cigeval").experiment_id])
    assert run.info.status == "FAILED"
