"""A sample whose every answer is cached is replayed from its stored record, without the agent.

The same seven-task file is judged three times with one cache: the first run (every answer
asked of the server), a replay through the agent graph (the short cut switched off), and a
replay by the short cut (the agent switched off: a sample it missed would end in error). The
short cut's records equal the graph's field by field, timings apart. A changed image, a
changed setting or a deleted answer makes the sample be judged again.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cigeval import Evaluator, Sample, ScriptedBackend
from cigeval.agent.rubric import CigevalRubric
from cigeval.backends.cache import ResponseCache
from cigeval.config import RunConfig
from cigeval.evaluation import replay as replay_module
from cigeval.evaluation.replay import SampleReplay
from cigeval.results import read_records
from cigeval.rubrics.custom import define_rubric
from cigeval.rubrics.registry import RUBRICS
from cigeval.tasks import get_task
from cigeval.tasks.registry import TASKS, register_task
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from cigeval.tools.difference import DifferenceTool
from cigeval.tools.registry import TOOLS, register_tool
from tests.test_records_unchanged import without

#: Fields that measure time, different in every run.
TIMINGS = {("usage", "wall_ms"), ("trace", "time"), ("trace", "latency_s")}


def judged(
    server: FakeOpenAIServer, samples: Path, out: Path, cache: Path, **settings: Any
) -> dict[str, dict[str, Any]]:
    """The records of one run over ``samples`` (its images stored next to ``out``, as the
    CLI does), by id."""
    run_config = RunConfig(
        concurrency=4, cache_dir=cache, preflight=False, image_dir=out.with_suffix(".images")
    )
    evaluator = Evaluator(f"openai:judge@{server.base_url}", run_config=run_config, **settings)
    evaluator.run(samples, out=out, quiet=True)
    return {record["id"]: record for record in read_records(out)}


def without_timings(record: dict[str, Any]) -> dict[str, Any]:
    return without(record, TIMINGS)


def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any sample judged through the agent from now on ends in error."""

    async def refused(self: Any, run: Any) -> Any:
        raise AssertionError("the agent ran")

    monkeypatch.setattr(CigevalRubric, "evaluate", refused)


@pytest.mark.parametrize(
    ("method", "encoding"), [("paper", "jpeg75"), ("extended", "original"), ("extended", "jpeg75")]
)
def test_the_short_cut_writes_the_records_a_graph_replay_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, encoding: str
) -> None:
    samples = write_jsonl(tmp_path / "set" / "samples.jsonl", seven_task_samples(tmp_path / "set"))
    cache = tmp_path / "cache"
    settings = {"method": method, "image_encoding": encoding}
    reply = rule_judge(tools={"*": "Difference"})  # every plan asks for a tool
    with FakeOpenAIServer(reply) as server:
        first = judged(server, samples, tmp_path / "first.jsonl", cache, **settings)
        asked = len(server.requests)
        with monkeypatch.context() as graph_only:
            graph_only.setattr(SampleReplay, "replayed", lambda *args: None)
            graph = judged(server, samples, tmp_path / "graph.jsonl", cache, **settings)
        with monkeypatch.context() as short_cut_only:
            no_agent(short_cut_only)
            short = judged(server, samples, tmp_path / "short.jsonl", cache, **settings)
        assert len(server.requests) == asked  # neither replay asked anything
    assert sorted(first) == sorted(graph) == sorted(short)
    assert len({r["task"] for r in short.values()}) == 7
    assert any(s.get("tool") == "Difference" for r in short.values() for s in r["sub_scores"])
    for sample_id, record in graph.items():
        assert first[sample_id]["status"] == record["status"] == "ok", record.get("error")
        assert record["usage"]["cached_calls"] == first[sample_id]["usage"]["calls"] > 0
        # every image it lists is in this run's own image folder, or is an input file
        for path in short[sample_id].get("image_files", {}).values():
            assert Path(path).is_file()
            assert "/short.images/" in path or "/set/" in path
        as_graph = json.loads(
            json.dumps(short[sample_id]).replace("/short.images/", "/graph.images/")
        )
        assert without_timings(as_graph) == without_timings(record), sample_id


def one_sample(folder: Path) -> Path:
    samples = [s for s in seven_task_samples(folder / "set") if s["id"] == "tie"]
    return write_jsonl(folder / "set" / "samples.jsonl", samples)


def calls_of(server: FakeOpenAIServer, start: int) -> int:
    return len(server.requests) - start


def test_a_changed_image_text_setting_or_answer_is_judged_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = one_sample(tmp_path)
    cache = tmp_path / "cache"
    reply = rule_judge(tools={"*": "Difference"})
    with FakeOpenAIServer(reply) as server:
        judged(server, samples, tmp_path / "1.jsonl", cache)
        start = len(server.requests)
        with monkeypatch.context() as short_cut_only:
            no_agent(short_cut_only)
            assert judged(server, samples, tmp_path / "2.jsonl", cache)["tie"]["status"] == "ok"
        assert calls_of(server, start) == 0  # replayed by the short cut: nothing asked

        # another instruction: judged again
        line = json.loads(samples.read_text())
        edited = write_jsonl(samples.parent / "edited.jsonl", [{**line, "instruction": "paint it"}])
        start = len(server.requests)
        judged(server, edited, tmp_path / "2b.jsonl", cache)
        assert calls_of(server, start) > 0

        # the same path, other bytes: judged again, the new image's answers asked
        output = tmp_path / "set" / "output.png"
        Image.new("RGB", (64, 64), "orange").save(output)
        start = len(server.requests)
        records = judged(server, samples, tmp_path / "3.jsonl", cache)
        assert calls_of(server, start) > 0
        assert records["tie"]["status"] == "ok"

        # another setting (another prompt template folder would do the same): judged again
        start = len(server.requests)
        judged(server, samples, tmp_path / "4.jsonl", cache, max_tokens=999)
        assert calls_of(server, start) > 0

        # an answer deleted from the cache: the sample is judged again, not replayed
        fresh = tmp_path / "fresh-cache"  # holds this sample's answers only
        judged(server, samples, tmp_path / "5.jsonl", fresh)
        answers = ResponseCache(fresh).store
        rows = answers._connection().execute(
            "SELECT key FROM entries WHERE namespace = 'responses'"
        )
        keys = [key for (key,) in rows]
        assert len(keys) > 1
        answers.delete("responses", keys[0])
        start = len(server.requests)
        again = judged(server, samples, tmp_path / "6.jsonl", fresh)["tie"]
        assert calls_of(server, start) == 1  # the one answer missing, asked again
        assert again["usage"]["cached_calls"] == again["usage"]["calls"] - 1

        # an answer changed in the cache: the record is rebuilt from the new answer
        cached = ResponseCache(fresh)
        for key in keys:
            answer = cached.lookup(key)
            assert answer is not None
            if '"score": 7' in answer.text:
                changed = answer.text.replace('"score": 7', '"score": 3')
                cached.save(key, dataclasses.replace(answer, text=changed))
                break
        start = len(server.requests)
        scores = judged(server, samples, tmp_path / "7.jsonl", fresh)["tie"]["sub_scores"]
        assert calls_of(server, start) == 0
        assert sorted(s["score"] for s in scores) == [3.0, 7.0]


@pytest.mark.parametrize("tampered", ["the score", "every number", "the replies too"])
def test_a_tampered_stored_record_is_not_replayed_its_answers_decide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tampered: str
) -> None:
    # issue 41: a record edited in the cache to claim 1.0 while its answers say 8 and 2
    samples = [s for s in seven_task_samples(tmp_path / "set") if s["id"] == "mie"]
    path = write_jsonl(tmp_path / "set" / "samples.jsonl", samples)
    cache = tmp_path / "cache"
    reply = rule_judge({"edit_success": 8, "over_editing": 2})
    with FakeOpenAIServer(reply) as server:
        first = judged(server, path, tmp_path / "1.jsonl", cache)["mie"]
        assert first["score"] == pytest.approx(0.2)
        store = ResponseCache(cache)
        rows = store.store._connection().execute(
            "SELECT value FROM entries WHERE namespace = 'values'"
        )
        stored = [json.loads(value) for (value,) in rows]
        (key,) = [e["key"] for e in stored if e["key"].startswith("sample|")]
        entry = store.get(key)
        record = entry["record"]
        record["score"] = 1.0
        if tampered != "the score":
            for sub in record["sub_scores"]:
                sub["score"] = 10.0
            for event in record["trace"]:
                if event["type"] == "judgement":
                    event["score"] = 10.0
                if tampered == "the replies too" and event.get("purpose") == "judge":
                    event["reply"] = event["reply"].replace('"score": 8', '"score": 10')
                    event["reply"] = event["reply"].replace('"score": 2', '"score": 10')
        store.set(key, entry)
        start = len(server.requests)
        again = judged(server, path, tmp_path / "2.jsonl", cache)["mie"]
        assert calls_of(server, start) == 0  # judged again from the cached answers
    assert again["score"] == pytest.approx(0.2)
    assert sorted(s["score"] for s in again["sub_scores"]) == [2.0, 8.0]


def test_an_edited_checkout_replays_nothing_stored_before_the_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = one_sample(tmp_path)
    cache = tmp_path / "cache"
    with FakeOpenAIServer(rule_judge(tools={"*": "Difference"})) as server:
        judged(server, samples, tmp_path / "1.jsonl", cache)
        # cigeval's files changed, its version not: the stored record is not used, so the
        # agent runs (and, switched off here, ends the sample in error)
        monkeypatch.setattr(replay_module, "source_digest", lambda: "an edited checkout")
        no_agent(monkeypatch)
        again = judged(server, samples, tmp_path / "2.jsonl", cache)["tie"]
    assert again["status"] == "error"
    assert "the agent ran" in again["error"]


def test_a_fully_cached_cli_rerun_imports_neither_langgraph_nor_openai(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "set" / "samples.jsonl", seven_task_samples(tmp_path / "set"))
    reply = rule_judge(tools={"*": "Difference"})
    with FakeOpenAIServer(reply) as server:

        def run(out: str) -> set[str]:
            probe = (
                "import runpy, sys, json\n"
                "sys.argv = ['cigeval', *json.loads(sys.argv[1])]\n"
                "try:\n"
                "    runpy.run_module('cigeval', run_name='__main__')\n"
                "except SystemExit as exc:\n"
                "    assert not exc.code, exc.code\n"
                "finally:\n"
                "    print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
            )
            arguments = [
                "evaluate", str(samples), "--model", f"openai:judge@{server.base_url}",
                "--out", str(tmp_path / out), "--cache-dir", str(tmp_path / "cache"),
                "--quiet", "--no-preflight",
            ]  # fmt: skip
            done = subprocess.run(
                [sys.executable, "-c", probe, json.dumps(arguments)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            return set(json.loads(done.stderr.strip().splitlines()[-1]))

        first = run("first.jsonl")
        asked = len(server.requests)
        again = run("again.jsonl")
        assert len(server.requests) == asked
    assert "langgraph" in first and "openai" in first  # the probe sees what a run imports
    assert not {m for m in again if m.split(".")[0] in {"langgraph", "openai", "langsmith"}}
    records = list(read_records(tmp_path / "again.jsonl"))
    assert [r["status"] for r in records] == ["ok"] * 7


def test_a_rubric_task_or_tool_of_the_users_is_never_replayed(tmp_path: Path) -> None:
    cache = RunConfig(cache_dir=tmp_path / "cache", preflight=False)
    scripted = ScriptedBackend(rule_judge())
    assert Evaluator(scripted, run_config=cache).replay is None  # a backend object: no cache
    with FakeOpenAIServer(rule_judge()) as server:
        model = f"openai:judge@{server.base_url}"
        assert Evaluator(model, run_config=cache).replay is not None
        assert (
            Evaluator(model, run_config=cache.model_copy(update={"use_cache": False})).replay
            is None
        )
        assert Evaluator([model, model], run_config=cache).replay is None  # an ensemble
        with RUBRICS.scoped():
            define_rubric("mine", factors={"legibility": "Can the text be read?"})
            assert Evaluator(model, run_config=cache, rubric="mine").replay is None
        with TOOLS.scoped():

            class Mine(DifferenceTool):
                name = "Mine"

            register_tool(Mine())
            assert Evaluator(model, run_config=cache).replay is None
        with TASKS.scoped():
            register_task(dataclasses.replace(get_task("text_guided_ie"), id="my_task"))
            sample = Sample(
                id="s",
                task="my_task",
                instruction="x",
                images={"source": "a.png", "output": "b.png"},
            )
            replay = Evaluator(model, run_config=cache).replay
            assert replay is not None and replay.key(sample, "jpeg75") is None


def test_a_replayed_score_holds_its_input_images_when_no_folder_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = json.loads(one_sample(tmp_path).read_text())
    sample = {
        **sample,
        "images": {r: str(tmp_path / "set" / f) for r, f in sample["images"].items()},
    }
    with FakeOpenAIServer(rule_judge()) as server:
        run_config = RunConfig(cache_dir=tmp_path / "cache", preflight=False)
        evaluator = Evaluator(f"openai:judge@{server.base_url}", run_config=run_config)
        first = evaluator.evaluate(sample)
        no_agent(monkeypatch)
        again = evaluator.evaluate(sample)
    assert again.ok and again.value == first.value
    assert sorted(again.images) == sorted(first.images) == ["output", "source"]
    assert again.images["output"].tobytes() == first.images["output"].tobytes()
