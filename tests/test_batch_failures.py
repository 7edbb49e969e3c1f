"""Failed batch lines and failed, expired or cancelled batches: retried within bounds, then
an error record for exactly the samples affected, with the provider's message."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.sample import iter_samples_file
from cigeval.score import Score
from cigeval.testing import rule_judge
from cigeval.testing.batch_server import FakeBatchServer
from tests.batch_support import study

#: Text found only in the prompts of the text-to-image sample (id t2i).
T2I_ONLY = "a red square"


def _run(server: FakeBatchServer, folder: Path, **settings: Any) -> tuple[dict[str, Score], Any]:
    run_config = RunConfig(batch=True, batch_poll_s=0.02, cache_dir=folder / "cache", **settings)
    evaluator = Evaluator(
        f"openai:judge-model@{server.base_url}", run_config=run_config, tools=("Difference",)
    )
    scores = evaluator.evaluate_many(list(iter_samples_file(study(folder))))
    assert evaluator.batch is not None
    return {s.id: s for s in scores}, evaluator.batch.stats


def _submissions(server: FakeBatchServer) -> Counter[str]:
    return Counter(server.batched_custom_ids())


def test_a_line_failing_once_is_resubmitted_and_answered(tmp_path: Path) -> None:
    with FakeBatchServer(rule_judge()) as server:
        server.fail_line(T2I_ONLY, 500, "overloaded", times=1)
        scores, stats = _run(server, tmp_path)
    assert all(s.ok for s in scores.values())
    assert stats.resubmitted == 1 and stats.failed_lines == 1 and stats.errors == 0
    assert sorted(_submissions(server).values())[-1] == 2  # one request went twice


def test_a_refused_request_fails_its_sample_at_once_with_the_message(tmp_path: Path) -> None:
    with FakeBatchServer(rule_judge()) as server:
        server.fail_line(T2I_ONLY, 400, "image too large")
        scores, stats = _run(server, tmp_path)
    assert not scores["t2i"].ok
    assert "HTTP 400: fault: image too large" in (scores["t2i"].error or "")
    assert all(s.ok for sample_id, s in scores.items() if sample_id != "t2i")
    assert max(_submissions(server).values()) == 1  # a 400 is not worth a second try
    assert stats.errors == 1


def test_a_line_that_keeps_failing_ends_as_an_error_after_the_retries(tmp_path: Path) -> None:
    with FakeBatchServer(rule_judge()) as server:
        server.fail_line(T2I_ONLY, 503, "overloaded")
        scores, _ = _run(server, tmp_path, batch_retries=1)
    error = scores["t2i"].error or ""
    assert "HTTP 503: fault: overloaded" in error and "submitted 2 times" in error
    assert all(s.ok for sample_id, s in scores.items() if sample_id != "t2i")
    assert max(_submissions(server).values()) == 2


@pytest.mark.parametrize("outcome", ["failed", "expired", "cancelled"])
def test_a_batch_that_does_not_complete_is_submitted_again(tmp_path: Path, outcome: str) -> None:
    with FakeBatchServer(rule_judge()) as server:
        server.outcome(outcome)
        scores, stats = _run(server, tmp_path)
    assert all(s.ok for s in scores.values())
    first = server.batches[0]
    assert first.status == outcome
    ran = len(first.lines) // 2 if outcome == "expired" else 0
    assert stats.resubmitted == len(first.lines) - ran
    # Requests the expired batch did answer are not sent again.
    again = set(server.batches[1].custom_ids)
    assert len(again & set(first.custom_ids)) == len(first.lines) - ran


def test_a_failed_batch_without_retries_fails_its_samples_with_the_provider_message(
    tmp_path: Path,
) -> None:
    with FakeBatchServer(rule_judge()) as server:
        server.outcome("failed")
        scores, stats = _run(server, tmp_path, batch_retries=0)
    assert len(scores) == 7 and stats.errors == 7
    for score in scores.values():
        assert not score.ok
        assert "ended failed" in (score.error or "")
        assert "invalid_request the test made it fail" in (score.error or "")


def test_a_server_without_the_batch_endpoints_fails_every_sample_clearly(tmp_path: Path) -> None:
    from cigeval.testing.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(rule_judge()) as server:
        # past the preflight (which refuses such a server before any sample, see
        # test_batch_preflight.py), every sample still fails clearly
        run_config = RunConfig(
            batch=True, batch_poll_s=0.02, cache_dir=tmp_path / "c", preflight=False
        )
        evaluator = Evaluator(
            f"openai:judge-model@{server.base_url}", run_config=run_config, tools=()
        )
        scores = evaluator.evaluate_many(list(iter_samples_file(study(tmp_path)))[:2])
    for score in scores:
        assert not score.ok
        assert "could not upload the batch input file" in (score.error or "")
        assert "HTTP 404" in (score.error or "")
