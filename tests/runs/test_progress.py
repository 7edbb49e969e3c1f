"""Progress inside samples (issue 24, item 8): the bar shows model calls and tokens as they
happen, not only when a sample ends."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import cigeval
from cigeval.cli import main
from cigeval.errors import BackendError
from cigeval.messages import ModelResponse, Usage
from cigeval.runs import progress
from cigeval.runs.progress import counting_calls
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    tie = next(s for s in seven_task_samples(tmp_path) if s["id"] == "tie")
    return write_jsonl(tmp_path / "samples.jsonl", [tie])


def test_the_bar_shows_each_call_while_the_sample_is_still_running(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    monkeypatch.setattr(progress, "REDRAW_S", 0.0)  # draw on every call, for the test
    judge = rule_judge()
    shown: list[str] = []  # what the terminal showed by the time each request arrived

    def reply(body: dict[str, Any]) -> str:
        shown.append(capsys.readouterr().err)
        return judge(body)

    with FakeOpenAIServer(reply) as server:  # 11 prompt + 7 completion tokens per call
        argv = ["evaluate", str(samples), "--model", "openai:judge", "--base-url"]
        argv += [server.base_url, "--out", str(tmp_path / "r.jsonl"), "--no-preflight"]
        status = main([*argv, "--no-cache"])  # with the progress bar
    assert status == 0
    final = capsys.readouterr().err
    assert len(shown) == 3  # plan, then the two sub-questions
    assert "0 calls (1 running), 0 tokens: " in shown[0] and "0/1" in shown[0]
    # the plan has returned, the sample has not: its call and tokens are on the bar already
    assert "1 call, 18 tokens: " in shown[1] + shown[2] and "1/1" not in shown[1] + shown[2]
    assert "3 calls, 54 tokens: " in final and "1/1" in final


def test_every_call_of_a_python_run_is_counted_with_its_tokens_and_failures() -> None:
    replies = iter(["not json", '[{"task_id": "1", "used": "no", "tool": "None"}]'])

    def reply(request: Any) -> str:
        text = next(replies, None)
        if text is None:
            raise BackendError("the server is gone")
        return text

    evaluator = cigeval.Evaluator(
        cigeval.ScriptedBackend(reply),
        run_config=cigeval.RunConfig(use_cache=False, preflight=False),
    )
    sample = {"id": "x", "task": "text_guided_ig", "prompt": "a cat", "images": {}}
    with counting_calls() as counter:
        score = evaluator.evaluate(sample | {"images": {"output": _image()}})
    assert score.status == "error"
    assert counter.started == counter.finished == score.usage["calls"] + 1  # + the failed one
    assert counter.running == 0 and counter.cached == 0
    assert counter.label().startswith(f"{counter.finished} calls, ")


def test_calls_are_counted_when_the_run_happens_in_another_thread(tmp_path: Path) -> None:
    # Inside a running event loop (Jupyter) the run goes to a thread of its own: the counter
    # must follow it there.
    evaluator = cigeval.Evaluator(
        cigeval.ScriptedBackend(rule_judge()),
        run_config=cigeval.RunConfig(use_cache=False, preflight=False),
    )
    sample = {"id": "x", "task": "text_guided_ig", "prompt": "a cat"}

    async def notebook_cell() -> cigeval.Score:
        return evaluator.evaluate(sample | {"images": {"output": _image()}})

    with counting_calls() as counter:
        score = asyncio.run(notebook_cell())
    assert score.ok
    assert counter.finished == score.usage["calls"] == 2


def test_without_a_run_nothing_is_counted() -> None:
    evaluator = cigeval.Evaluator(
        cigeval.ScriptedBackend(rule_judge()),
        run_config=cigeval.RunConfig(use_cache=False, preflight=False),
    )
    with counting_calls() as outer:
        pass
    score = evaluator.evaluate(
        {"id": "x", "task": "text_guided_ig", "prompt": "a cat", "images": {"output": _image()}}
    )
    assert score.ok and outer.started == 0


def test_labels_read_well() -> None:
    counter = progress.CallCounter()
    counter.call_started()
    assert counter.label() == "0 calls (1 running), 0 tokens"
    response = ModelResponse("ok", "m", Usage(1200, 345), cached=True)
    counter.call_ended(response)
    assert counter.label() == "1 call (1 cached), 1.5k tokens"


def _image() -> Any:
    from PIL import Image

    return Image.new("RGB", (16, 16), "red")
