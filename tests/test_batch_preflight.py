"""``--batch`` preflight: the files and batches endpoints are checked before the first sample.

A server without them (fakellm, ``transformers serve``) or that cannot serve them (a LiteLLM
proxy without its files settings answers 500) stops the run with exit status 2 naming the
endpoint, instead of failing every sample later.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.errors import PreflightError
from cigeval.testing import rule_judge
from cigeval.testing.batch_server import FakeBatchServer
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli


@pytest.fixture
def samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:2])


def batch_run(server: FakeOpenAIServer, samples: Path, out: Path) -> int:
    flags = ("--batch", "--batch-poll", "0.02", "--tools", "")
    return evaluate_cli(server, samples, out, *flags, preflight=True)


def test_a_server_without_batch_endpoints_exits_2_before_any_sample(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        url = server.base_url
        status = batch_run(server, samples, out)
        asked = list(server.requests)
    stderr = capsys.readouterr().err
    assert status == 2
    assert f"GET {url}/files answered HTTP 404" in stderr
    assert f"GET {url}/batches answered HTTP 404" in stderr
    assert "Leave out --batch" in stderr
    assert not asked  # no chat request, no upload: nothing of a sample reached the server
    assert not out.exists() or not out.read_text().strip()


def test_a_batch_route_that_cannot_be_served_is_named(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBatchServer(rule_judge(), list_status={"batches": 500}) as server:
        url = server.base_url
        status = batch_run(server, samples, tmp_path / "results.jsonl")
        assert not server.batches
    stderr = capsys.readouterr().err
    assert status == 2
    assert f"GET {url}/batches answered HTTP 500 (batches not configured)" in stderr
    assert "/files answered" not in stderr


def test_a_server_with_the_batch_api_passes_and_runs(samples: Path, tmp_path: Path) -> None:
    with FakeBatchServer(rule_judge()) as server:
        assert batch_run(server, samples, tmp_path / "results.jsonl") == 0
        assert server.list_requests == {"files": 1, "batches": 1}
        assert server.batches and all(b.status == "completed" for b in server.batches)


async def test_a_refused_key_is_named_from_python(tmp_path: Path) -> None:
    with FakeBatchServer(rule_judge(), list_status={"files": 401}) as server:
        evaluator = Evaluator(
            f"openai:judge-model@{server.base_url}",
            run_config=RunConfig(batch=True, cache_dir=tmp_path / "cache"),
            tools=(),
        )
        with pytest.raises(PreflightError, match=r"/files refused the API key \(HTTP 401"):
            await evaluator.preflight_async()
        await evaluator.aclose()
