"""``--engine ray`` and ``evaluate_dataset``: a local Ray gives the local engine's records.

The judge is the fake OpenAI-compatible server on 127.0.0.1 answering with ``rule_judge``,
so the worker actors (separate processes) go through the real OpenAI backend.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.config import EvalConfig, RunConfig
from cigeval.errors import ConfigError, MissingDependency
from cigeval.results.jsonl import read_records
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli
from tests.engines.records import normalised, records_by_id

pytestmark = pytest.mark.usefixtures("ray_local")

RAY = ("--engine", "ray", "--ray-workers", "2")
#: One worker: what the resume tests check does not depend on the spread, and each actor
#: costs seconds to start on a two-core machine.
RAY_1 = ("--engine", "ray", "--ray-workers", "1")
TOOLS = ("--tools", "Difference,Scene Graph")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    return tmp_path


def _samples_with_bad_ones(folder: Path) -> Path:
    """The seven tasks, a zero-byte image, an unknown task and a line that is not JSON."""
    good = seven_task_samples(folder)
    (folder / "empty.png").write_bytes(b"")
    bad = [
        {"id": "empty", "task": "text_guided_ig", "prompt": "x", "images": {"output": "empty.png"}},
        {"id": "unknown", "task": "video_gen", "prompt": "x", "images": {"output": "output.png"}},
    ]
    path = write_jsonl(folder / "samples.jsonl", [*good, *bad])
    with path.open("a") as handle:
        handle.write("{not json\n")
    return path


def _plans(server: FakeOpenAIServer) -> int:
    """Planning requests the server got: one per sample judged by the cigeval rubric."""
    return sum("### Task" in request_text(r.body) for r in server.requests)


def test_the_cli_on_ray_writes_the_records_of_the_local_engine(env: Path, capsys):
    samples = _samples_with_bad_ones(env / "data")
    (env / "local").mkdir()
    (env / "ray").mkdir()
    scores = {"edit_success": 3, "over_editing": 9}
    with FakeOpenAIServer(rule_judge(scores, tools={"over_editing": "Difference"})) as server:
        # no cache: identical requests of two samples are then sent twice by either engine
        # (the cache would share them within one process only, which timing decides)
        local = evaluate_cli(server, samples, env / "local/out.jsonl", *TOOLS, "--no-cache")
        local_requests = len(server.requests)
        capsys.readouterr()
        on_ray = evaluate_cli(server, samples, env / "ray/out.jsonl", *TOOLS, "--no-cache", *RAY)
        ray_requests = len(server.requests) - local_requests
    assert local == on_ray == 1  # the bad samples are error records in both
    expected = records_by_id(env / "local/out.jsonl")
    got = records_by_id(env / "ray/out.jsonl")
    assert sorted(got) == sorted(expected)
    assert len(got) == 10
    for sample_id, record in expected.items():
        assert got[sample_id] == record, sample_id
    assert ray_requests == local_requests
    statuses = {i: r["status"] for i, r in got.items()}
    # records arrive in completion order, which the workers' timing decides
    assert {i for i, s in statuses.items() if s == "error"} == {"empty", "unknown", "@line:10"}
    assert "zero-byte" in got["empty"]["error"] and "invalid JSON" in got["@line:10"]["error"]
    assert got["tie"]["score"] == pytest.approx(0.3)
    summary = capsys.readouterr().err
    assert "10 evaluated (7 ok, 3 error)" in summary


def test_a_ray_run_resumes_without_judging_anything_twice(env: Path):
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env))
    out = env / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *TOOLS, *RAY_1, "--limit", "3") == 0
        assert len(list(read_records(out))) == 3 and _plans(server) == 3
        # the rerun judges only the four samples still missing
        assert evaluate_cli(server, samples, out, *TOOLS, *RAY_1) == 0
        assert _plans(server) == 7
        sent = len(server.requests)
        # a third run to a new file: every answer comes from the cache the workers wrote
        assert evaluate_cli(server, samples, env / "again.jsonl", *TOOLS, *RAY_1) == 0
        assert len(server.requests) == sent
    ids = [r["id"] for r in read_records(out)]
    assert sorted(ids) == sorted(s["id"] for s in seven_task_samples(env))
    again = list(read_records(env / "again.jsonl"))
    assert all(r["usage"]["cached_calls"] == r["usage"]["calls"] for r in again)


def test_retry_errors_on_ray_asks_the_judge_again(env: Path):
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:2])
    out = env / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        server.fail(0, "400")  # the first request of the first run fails for good
        assert evaluate_cli(server, samples, out, *TOOLS, *RAY_1, "--max-retries", "0") == 1
        failed = [r["id"] for r in read_records(out) if r["status"] == "error"]
        assert len(failed) == 1
        assert evaluate_cli(server, samples, out, *TOOLS, *RAY_1, "--retry-errors") == 0
    records = list(read_records(out))
    assert sorted(r["id"] for r in records) == ["mie", "t2i"]
    assert all(r["status"] == "ok" for r in records)


def test_evaluate_dataset_with_a_judge_object_matches_the_local_evaluator(
    ray_local: Any, tmp_path: Path
):
    from cigeval import Evaluator, ScriptedBackend
    from cigeval.engines import evaluate_dataset, record_of

    folder = tmp_path / "data"
    rows = seven_task_samples(folder)
    judge = ScriptedBackend(rule_judge({"prompt_following": 4}))
    run_config = RunConfig(use_cache=False, image_dir=tmp_path / "images", preflight=False)
    config = EvalConfig(tools=("Difference",))
    local = Evaluator(judge, config=config, run_config=run_config)
    scores = local.evaluate_many([sample_from_dict(r, base_dir=folder) for r in rows])
    expected = {s.id: normalised(s.to_record(), tmp_path) for s in scores}

    # rows of differing fields: Arrow fills the gaps with nulls, which count as absent
    ds = ray_local.data.from_items(rows, override_num_blocks=len(rows))
    out = evaluate_dataset(
        ds,
        judge,
        run_config=run_config,
        base_dir=folder,
        workers=2,
        config=config,
    )
    got_rows = out.take_all()
    got = {r["id"]: normalised(record_of(r), tmp_path) for r in got_rows}
    assert got == expected
    assert {r["status"] for r in got_rows} == {"ok"}
    assert got["t2i"]["score"] == pytest.approx(0.4)


def test_a_judge_that_cannot_reach_the_workers_is_a_clear_error(ray_local: Any):
    from cigeval import ScriptedBackend
    from cigeval.engines import evaluate_dataset

    class LockedJudge(ScriptedBackend):
        def __init__(self) -> None:
            super().__init__(["{}"])
            self.lock = threading.Lock()

    with pytest.raises(ConfigError, match="spec string"):
        evaluate_dataset(ray_local.data.from_items([{"id": "a"}]), LockedJudge(), workers=1)


def test_a_failed_preflight_on_the_workers_stops_the_run_with_status_2(env: Path, capsys):
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:1])
    with FakeOpenAIServer(rule_judge(), served_models=["another-model"]) as server:
        status = evaluate_cli(server, samples, env / "out.jsonl", *TOOLS, *RAY_1, preflight=True)
        assert not server.requests
    assert status == 2
    err = capsys.readouterr().err
    assert "preflight failed" in err and "another-model" in err
    assert "in --model" in err  # the command line's words, though a Ray worker found it
    assert not list(read_records(env / "out.jsonl"))


def test_without_ray_the_engine_names_the_extra(env: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    from cigeval.engines.ray_engine import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingDependency, match=r"pip install 'cigeval\[ray\]'"):
        import_ray()
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:1])
    argv = ["evaluate", str(samples), "--model", "openai:m@http://127.0.0.1:9/v1"]
    assert main([*argv, "--out", str(env / "o.jsonl"), "--engine", "ray", "--quiet"]) == 2
    assert "cigeval[ray]" in capsys.readouterr().err


def test_batch_on_ray_is_refused_before_anything_runs(
    env: Path, ray_local: Any, capsys: pytest.CaptureFixture[str]
):
    from cigeval.engines import evaluate_dataset

    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:1])
    argv = ["evaluate", str(samples), "--model", "openai:m@http://127.0.0.1:9/v1", "--batch"]
    assert main([*argv, "--out", str(env / "o.jsonl"), *RAY_1, "--quiet"]) == 2
    assert "--batch and --engine ray cannot be combined" in capsys.readouterr().err
    assert not (env / "o.jsonl").exists()
    with pytest.raises(ConfigError, match="cannot be combined"):
        evaluate_dataset(
            ray_local.data.from_items([{"id": "a"}]),
            "openai:m@http://127.0.0.1:9/v1",
            run_config=RunConfig(batch=True),
            workers=1,
        )


def test_records_cross_the_cluster_as_json_text(tmp_path: Path):
    from cigeval.engines._rows import LINE_COLUMN, decode_row, encode_line
    from cigeval.sample import iter_samples_file

    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:1])
    line = next(iter_samples_file(samples))
    row = encode_line(line, refresh=True)
    assert list(row) == [LINE_COLUMN] and isinstance(json.loads(row[LINE_COLUMN]), dict)
    item, refresh = decode_row(row, None)
    assert refresh is True
    assert item.sample == line.sample and item.sample.base_dir == line.sample.base_dir


def test_evaluator_run_on_ray_takes_samples_in_memory(ray_local: Any, tmp_path: Path) -> None:
    from cigeval import Evaluator, ScriptedBackend
    from cigeval.engines import EngineConfig

    folder = tmp_path / "data"
    samples = [sample_from_dict(r, base_dir=folder) for r in seven_task_samples(folder)]
    judge = ScriptedBackend(rule_judge({"prompt_following": 4}))
    run_config = RunConfig(use_cache=False, image_dir=tmp_path / "images", preflight=False)
    evaluator = Evaluator(judge, config=EvalConfig(tools=("Difference",)), run_config=run_config)
    local = evaluator.run(samples, out=tmp_path / "local/out.jsonl", quiet=True)
    engine = EngineConfig(engine="ray", ray_workers=1)
    on_ray = evaluator.run(samples[:4], out=tmp_path / "ray/out.jsonl", engine=engine, quiet=True)
    # the rest of the list on a rerun: resumed, nothing judged twice
    rest = evaluator.run(samples, out=tmp_path / "ray/out.jsonl", engine=engine, quiet=True)
    assert local.exit_status == on_ray.exit_status == rest.exit_status == 0
    assert rest.summary.skipped == 4 and rest.summary.statuses["ok"] == 3
    expected = records_by_id(tmp_path / "local/out.jsonl")
    got = records_by_id(tmp_path / "ray/out.jsonl")
    assert got == expected
