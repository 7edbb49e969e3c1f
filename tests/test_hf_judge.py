"""The agent driven by a real local transformers model (a tiny random Qwen2-VL, offline).

A random model writes gibberish: the point is that the whole local path runs (loading,
chat template, images, generation, re-asking) and that gibberish becomes an error record,
never a number.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.sample import sample_from_dict
from tests.samples_factory import seven_task_samples

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
    )
    score = evaluator.evaluate(sample)
    calls = score.trace.model_calls()
    assert score.status == "error" and score.value is None
    assert "ParseError" in (score.error or "")
    # two sub-questions, each asked and re-asked once, all answered by the local model
    assert len(calls) == 4
    assert all(c.purpose == "judge" and isinstance(c.reply, str) for c in calls)
    assert {c.attempt for c in calls} == {1, 2}
    assert all(len(c.messages[-1].images) == 2 for c in calls if c.attempt == 1)
    assert score.judge.startswith("hf:")
    # the run closed the backend's batching thread (it would keep the model in memory)
    assert not any(t.name == f"cigeval-{score.judge}" for t in threading.enumerate())
