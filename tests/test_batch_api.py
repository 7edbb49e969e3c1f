"""``--batch`` end to end against the batch test double: stages, identical records, splits."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.backends.batch import BatchBackend
from cigeval.backends.scripted import ScriptedBackend
from cigeval.errors import ConfigError
from cigeval.sample import iter_samples_file
from cigeval.testing import request_text, rule_judge
from cigeval.testing.batch_server import FakeBatchServer
from tests.batch_support import (
    judge,
    normalised,
    records_by_id,
    run_cli,
    shared_calls,
    study,
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


def _kind(body: dict[str, Any]) -> str:
    text = request_text(body)
    if "### Task" in text:
        return "plan"
    if "could not be used" in text:
        return "re-ask"
    if "RULES:" in text:
        return "judge round 2" if "Round 2" in text else "judge"
    return "scene graph"


def test_batch_gives_the_records_of_direct_calls_through_one_batch_per_stage(env: Path) -> None:
    samples = study(env)
    direct, batched = env / "direct" / "results.jsonl", env / "batch" / "results.jsonl"
    with FakeBatchServer(judge()) as server:
        assert run_cli(server, samples, direct, "--cache-dir", str(env / "c1")) == 0
        direct_calls = len(server.requests)
        assert not server.batches
        server.replies = judge()  # the same judge, its one spoilt reply armed again
        flags = ("--batch", "--batch-poll", "0.02", "--cache-dir", str(env / "c2"))
        assert run_cli(server, samples, batched, *flags) == 0
        batch_calls = server.requests[direct_calls:]
    # Every model call went through a batch: none reached the chat route directly.
    assert batch_calls and all(r.path.endswith("(batch)") for r in batch_calls)
    assert len(batch_calls) == direct_calls
    ids = server.batched_custom_ids()
    assert len(ids) == len(set(ids)) == direct_calls
    # The stages of the agent, each one batch: every plan; the first judge calls and the
    # Scene Graph tool's calls; second rounds, the re-ask and the judge calls that waited
    # for a scene graph; the last second round (plan -> scene graph -> judge -> round 2).
    kinds = [Counter(_kind(line["body"]) for line in b.lines) for b in server.batches]
    assert kinds[0] == {"plan": 7}
    assert len(server.batches) == 4
    # each sample asks its own scene graphs: the two subject samples share their images
    assert kinds[1]["scene graph"] == 4 and kinds[1]["judge"] > 0
    assert kinds[2]["re-ask"] == 1 and kinds[2]["judge round 2"] > 0
    assert all(b.status == "completed" for b in server.batches)
    # The same records, but for timings, where images are copied and event interleaving.
    a, b = records_by_id(direct), records_by_id(batched)
    assert a.keys() == b.keys() and len(a) == 7
    assert all(r["status"] == "ok" for r in b.values())
    for sample_id in a:
        assert normalised(a[sample_id], direct) == normalised(b[sample_id], batched), sample_id
    assert shared_calls(a) == shared_calls(b)
    # Each request was sent once, directly or in a batch, and counted for its sample.
    assert sum(r["usage"]["http_attempts"] for r in a.values()) == direct_calls
    assert sum(r["usage"]["http_attempts"] for r in b.values()) == len(ids)
    # The batch record lies next to the results and lists the four batches.
    assert (batched.parent / "results.batches.json").is_file()


def test_a_second_batch_run_asks_only_what_proved_unusable(env: Path) -> None:
    """Replies are cached as on the direct path; the one reply that could not be parsed was
    dropped from the cache and from the batch record, so it is asked again, not replayed."""
    samples = study(env)
    with FakeBatchServer(judge()) as server:
        flags = ("--batch", "--batch-poll", "0.02", "--cache-dir", str(env / "c"))
        assert run_cli(server, samples, env / "a.jsonl", *flags) == 0
        submitted = len(server.batches)
        assert run_cli(server, samples, env / "b.jsonl", *flags) == 0
    (again,) = server.batches[submitted:]
    (line,) = again.lines
    text = request_text(line["body"])
    assert "control image" in text and "could not be used" not in text
    assert line["custom_id"] in server.batches[1].custom_ids  # the spoilt first ask


def _evaluator(server: FakeBatchServer, env: Path, **settings: Any) -> Evaluator:
    run_config = RunConfig(
        batch=True,
        batch_poll_s=0.02,
        cache_dir=env / "cache",
        batch_state=env / "batches.json",
        **settings,
    )
    return Evaluator(
        f"openai:judge-model@{server.base_url}",
        run_config=run_config,
        tools=("Difference",),
    )


def test_stages_are_split_at_the_request_limit(env: Path) -> None:
    samples = list(iter_samples_file(study(env)))
    with FakeBatchServer(rule_judge()) as server:
        evaluator = _evaluator(server, env, batch_max_requests=3)
        scores = evaluator.evaluate_many(samples)
    assert all(s.ok for s in scores)
    assert evaluator.batch is not None
    assert sorted(evaluator.batch.stats.stages()[1]) == [1, 3, 3]  # the seven plans
    assert all(len(b.lines) <= 3 for b in server.batches)
    assert sorted(len(b.lines) for b in server.batches[:3]) == [1, 3, 3]


def test_a_request_larger_than_a_batch_file_is_an_error_naming_the_limit(env: Path) -> None:
    samples = list(iter_samples_file(study(env)))[:2]
    with FakeBatchServer(rule_judge()) as server:
        scores = _evaluator(server, env, batch_max_bytes=1000).evaluate_many(samples)
    assert not server.batches
    for score in scores:
        assert not score.ok and "more than a batch file may hold (1,000" in (score.error or "")


def test_a_tool_still_running_in_a_thread_holds_the_stage_back(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judge calls of samples whose Difference tool is slow join the same batch."""
    import cigeval.tools.difference as difference

    compare = difference.compare_images
    delays = random.Random(0)

    def slow_compare(*args: Any, **kwargs: Any) -> Any:
        time.sleep(delays.uniform(0.05, 0.4))
        return compare(*args, **kwargs)

    monkeypatch.setattr(difference, "compare_images", slow_compare)
    samples = list(iter_samples_file(study(env)))
    with FakeBatchServer(rule_judge(tools={"*": "Difference"})) as server:
        scores = _evaluator(server, env).evaluate_many(samples)
    assert all(s.ok for s in scores)
    kinds = [Counter(_kind(line["body"]) for line in b.lines) for b in server.batches]
    # the official flow asks a sample's sub-questions one after another: a stage per
    # sub-question, each one batch for all the samples however slow their tools
    assert kinds[0] == {"plan": 7} and all(set(k) == {"judge"} for k in kinds[1:])
    assert [sum(k.values()) for k in kinds[1:]] == [7, 6, 1]


def test_batch_needs_an_openai_judge() -> None:
    scripted = ScriptedBackend(rule_judge())
    with pytest.raises(ConfigError, match="none of the judges"):
        Evaluator(scripted, run_config=RunConfig(batch=True))


def test_only_openai_judges_of_an_ensemble_are_batched(env: Path) -> None:
    with FakeBatchServer(rule_judge()) as server:
        evaluator = Evaluator(
            [f"openai:judge-model@{server.base_url}", ScriptedBackend(rule_judge())],
            run_config=RunConfig(batch=True, cache_dir=env / "c"),
        )
    assert isinstance(evaluator.backends[0], BatchBackend)
    assert isinstance(evaluator.backends[1], ScriptedBackend)
    assert asyncio.iscoroutinefunction(evaluator.backends[0].complete)


def test_the_summary_shows_the_batches_and_the_saving(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = study(env)
    prices = env / "prices.json"
    prices.write_text('{"fake-model": {"prompt": 1000000, "completion": 2000000}}')
    with FakeBatchServer(rule_judge()) as server:
        flags = ("--batch", "--batch-poll", "0.02", "--price-table", str(prices))
        assert run_cli(server, samples, env / "r.jsonl", *flags, "--tools", "") == 0
        sent = len(server.requests)
    err = capsys.readouterr().err
    # The fake server reports 11 prompt and 7 completion tokens per call: $25 a call listed.
    listed, saved = 25.0 * sent, 12.5 * sent
    assert f"batch API: {sent} calls sent in 1 new batch(es) (stage 1: {sent})" in err
    assert f"batch discount saved ${saved:.4f} of ${listed:.4f}" in err
