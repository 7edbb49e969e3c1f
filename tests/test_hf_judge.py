"""The agent driven by a real local transformers model (a tiny random Qwen2-VL, offline).

A random model writes gibberish: the point is that the whole local path runs (loading,
chat template, images, generation, re-asking) and that gibberish, and replies cut at the
token limit, become an error record, never a number.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.sample import sample_from_dict
from cigeval.testing.samples_factory import seven_task_samples

pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_a_local_model_runs_the_agent_and_gibberish_is_an_error(tmp_path: Path):
    from tests.backends.tiny_qwen import save_tiny_qwen2_vl

    model_dir = save_tiny_qwen2_vl(tmp_path / "tiny-qwen")
    records = {r["task"]: r for r in seven_task_samples(tmp_path / "data")}
    sample = sample_from_dict(records["text_guided_ie"], base_dir=tmp_path / "data")
    evaluator = Evaluator(
        f"hf:{model_dir}",
        run_config=RunConfig(use_cache=False),
        tools=(),
        max_tokens=12,
        max_parse_retries=1,
        reply_parsing="strict",  # re-asked in the conversation, each failure a ParseError
    )
    score = evaluator.evaluate(sample)
    calls = score.trace.model_calls()
    assert score.status == "error" and score.value is None
    assert score.error is not None and score.error.count("ParseError") == 2
    assert all(c.purpose == "judge" and isinstance(c.reply, str) for c in calls)
    assert all(len(c.messages[-1].images) == 2 for c in calls if c.attempt == 1)
    # A random model runs into the token limit: each cut reply was asked again with twice
    # the budget, never past 4 x --max-tokens, and never read as an answer.
    for question in ("edit_success", "over_editing"):
        first = next(c for c in calls if c.question_id == question)
        assert (first.finish_reason, first.completion_tokens) == ("length", 12)
        notes = [e.message for e in score.trace.events if e.type == "error"]
        assert any("cut off at 12 tokens" in n and "with 24 tokens" in n for n in notes)
    assert all(c.completion_tokens <= 48 for c in calls)
    cut = [c for c in calls if c.finish_reason == "length"]
    assert score.usage["cut_off_replies"] == len(cut) >= 4
    assert score.usage["calls"] == len(calls) and score.usage["http_attempts"] == 0
    assert "none usable" in score.error
    assert score.judge.startswith("hf:")
    # the run closed the backend's batching thread (it would keep the model in memory)
    assert not any(t.name == f"cigeval-{score.judge}" for t in threading.enumerate())
