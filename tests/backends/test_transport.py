"""The transport of the HTTP backends: one retry loop for all, Retry-After within caps, rate
limits the circuit breaker counts, checked usage figures, no redirects, failures in words."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from cigeval.backends import _retrying
from cigeval.backends._retrying import CallFailure, RetryingBackend, connection_detail
from cigeval.backends.anthropic_backend import AnthropicBackend
from cigeval.backends.attempts import counting_http_attempts
from cigeval.backends.azure_backend import AzureOpenAIBackend
from cigeval.backends.gemini_backend import GeminiBackend
from cigeval.backends.litellm_backend import LiteLLMBackend
from cigeval.backends.openai_backend import OpenAIBackend
from cigeval.backends.policy import CallPolicy
from cigeval.cli import main
from cigeval.errors import BackendError, ConfigError, TransportError
from cigeval.messages import Usage
from cigeval.results import read_records
from cigeval.runs import EXIT_CIRCUIT_BREAKER
from cigeval.testing.local_http import LocalHTTPService
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import write_jsonl
from tests.test_sturdiness import distinct_samples

from .support import fast_policy, image_request


class FixedAnswer(LocalHTTPService):
    """Answers every request with the same status, JSON body and headers, counting them."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.status, self.body, self.headers = status, body, headers
        self.requests = 0
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        handler.rfile.read(int(handler.headers.get("Content-Length", 0)))
        self.requests += 1
        self._send(handler, self.status, self.body, self.headers)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        self._post(handler)


def completion(content: str | None, finish_reason: str, usage: Any = None) -> dict[str, Any]:
    """A chat completion as a server writes it, its usage figures as given."""
    body: dict[str, Any] = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
    return body


def rate_limited() -> FixedAnswer:
    """A server that refuses every call with HTTP 429 and ``Retry-After: 100000``."""
    body = {"error": {"message": "slow down"}}
    return FixedAnswer(429, body, {"Retry-After": "100000"})


def test_every_http_backend_retries_and_redacts_with_the_one_loop() -> None:
    for backend in (OpenAIBackend, AzureOpenAIBackend, GeminiBackend):
        assert issubclass(backend, RetryingBackend)
    for backend in (OpenAIBackend, AnthropicBackend, LiteLLMBackend):
        assert backend.complete is RetryingBackend.complete
        assert backend.redact is RetryingBackend.redact
        assert "_delay" not in vars(backend)


def test_the_two_behaviours_that_differ_between_providers_stay() -> None:
    openai_judge = OpenAIBackend("m", ["http://127.0.0.1:9/v1"])
    # 1. a 404 names what to check: an OpenAI-compatible base URL usually ends in /v1
    assert "/v1" in openai_judge._failure_message(0, 1, "HTTP 404: no", 404)
    assert "/v1" not in RetryingBackend.not_found_hint
    # 2. any ValueError the reading of an OpenAI reply raises is an unreadable reply (retried);
    # the SDK-only backends let a ValueError of their own through
    failure = openai_judge._classify(ValueError("bad body"))
    assert failure == CallFailure("unreadable reply: bad body")
    assert _retrying.sdk_failure(ValueError("bad body"), openai) is None


def test_the_policy_checks_its_values_and_takes_the_run_settings_names() -> None:
    with pytest.raises(ConfigError, match="max_retries"):
        CallPolicy(max_retries=-1)
    with pytest.raises(ConfigError, match="max_retry_after_s"):
        CallPolicy(max_retry_after_s=-1)
    backend = OpenAIBackend("m", ["http://127.0.0.1:9/v1"], policy=CallPolicy(timeout_s=3))
    assert backend.policy.timeout_s == 3 and backend.policy.retry_backoff_s == 0.5


async def test_the_default_policy_bounds_a_rate_limited_call_by_its_arithmetic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = CallPolicy()
    # every attempt timing out, plus every wait the budget allows: 7 x 120 s + 120 s
    assert policy.longest_call_s == 960
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(_retrying, "_sleep", no_wait)
    with rate_limited() as server:
        backend = OpenAIBackend("m", [server.base_url], policy=policy)
        with pytest.raises(TransportError) as raised:
            await backend.complete(image_request())
    # Retry-After: 100000 is honoured up to 60 s, within 120 s of waiting per call
    assert waits and all(w <= policy.max_retry_after_s for w in waits)
    assert sum(waits) <= policy.retry_wait_budget_s
    assert server.requests == len(waits) + 1 <= policy.max_retries + 1
    message = str(raised.value)
    assert raised.value.reason == "rate_limited"
    assert "rate limited" in message and "100000 s (Retry-After)" in message
    # from Python, the RunConfig fields (the command line's flags: the test below)
    assert "max_retry_after_s" in message and "retry_wait_budget_s" in message


@pytest.mark.parametrize("breaker", ["10", "0"], ids=["breaker-on", "breaker-off"])
def test_a_server_answering_every_call_429_ends_a_12_sample_run_fast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], breaker: str
) -> None:
    samples = write_jsonl(tmp_path / "samples.jsonl", distinct_samples(tmp_path, 12))
    out = tmp_path / "out.jsonl"
    started = time.monotonic()
    with rate_limited() as server:
        status = main(
            [
                "evaluate", str(samples), "--model", "openai:judge", "--base-url",
                server.base_url, "--out", str(out), "--quiet", "--no-preflight", "--no-cache",
                "--tools", "", "--concurrency", "4", "--circuit-breaker", breaker,
                "--circuit-breaker-seconds", "1", "--max-retry-after-s", "0.2",
                "--retry-wait-budget-s", "0.5",
            ]
        )  # fmt: skip
    assert time.monotonic() - started < 60
    said = capsys.readouterr().err
    assert "rate" in said and "429" in said
    records = list(read_records(out))
    if breaker == "0":
        assert status == 1 and len(records) == 12
        for record in records:
            assert record["status"] == "error" and record["error_kind"] == "transport.rate_limited"
            assert "rate limited" in record["error"] and "--max-retry-after-s" in record["error"]
    else:
        assert status == EXIT_CIRCUIT_BREAKER and len(records) < 12
        assert "transport.rate_limited" in said


async def test_a_redirect_to_another_origin_is_an_error_and_the_other_gets_nothing() -> None:
    with FakeOpenAIServer(["stolen"]) as other:
        target = other.base_url + "/chat/completions"
        with FixedAnswer(307, {}, {"Location": target}) as server:
            backend = OpenAIBackend("m", [server.base_url], policy=fast_policy())
            with pytest.raises(BackendError) as raised:
                await backend.complete(image_request())
            assert server.requests == 1  # not retried
        assert other.requests == []
    message = str(raised.value)
    assert target in message and "another origin" in message and "HTTP 307" in message


async def test_the_anthropic_judge_follows_no_redirect_either() -> None:
    with FakeOpenAIServer(["stolen"]) as other:
        with FixedAnswer(307, {}, {"Location": other.base_url + "/messages"}) as server:
            backend = AnthropicBackend("c", [server.base_url], api_key="k", policy=fast_policy())
            with pytest.raises(BackendError, match="another origin"):
                await backend.complete(image_request())
        assert other.requests == []


async def test_a_redirect_on_the_same_server_is_refused_too() -> None:
    with FixedAnswer(308, {}, {"Location": "/v2/chat/completions"}) as server:
        backend = OpenAIBackend("m", [server.base_url], policy=fast_policy())
        with pytest.raises(BackendError, match="the same server"):
            await backend.complete(image_request())


def test_a_transport_exception_becomes_a_sentence() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    error = openai.APIConnectionError(request=request)
    error.__cause__ = httpx.StreamConsumed()
    assert connection_detail(error) == "the request body was already sent and cannot be sent again"
    refused = openai.APIConnectionError(request=request)
    refused.__cause__ = httpx.ConnectError("[Errno 111] Connection refused")
    assert "could not be opened" in connection_detail(refused)


@pytest.mark.parametrize(
    ("reported", "kept"),
    [
        ((-5, 7), Usage(0, 7)),
        ((12, 10**30), Usage(12, 0)),
        (("12", 7), Usage(0, 7)),
        ((12.0, 7), Usage(12, 7)),
    ],
)
async def test_impossible_usage_figures_are_ignored_with_a_note(
    reported: tuple[Any, Any], kept: Usage
) -> None:
    with FixedAnswer(200, completion("fine", "stop", reported), {}) as server:
        backend = OpenAIBackend("m", [server.base_url], policy=fast_policy())
        with counting_http_attempts() as counter:
            response = await backend.complete(image_request())
    assert response.text == "fine" and response.usage == kept
    assert response.usage.total_tokens >= 0
    bad = [v for v in reported if not (isinstance(v, int | float) and 0 <= v <= 10**9)]
    assert len(counter.notes) == len(bad)
    for note in counter.notes:
        assert "not a token count" in note and "ignored" in note


async def test_a_reply_withheld_by_the_content_filter_says_so() -> None:
    body = completion(None, "content_filter")
    with FixedAnswer(200, body, {}) as server:
        backend = OpenAIBackend("m", [server.base_url], policy=fast_policy())
        response = await backend.complete(image_request())
    assert server.requests == 1  # not retried as an unreadable reply
    assert (response.text, response.finish_reason) == ("", "content_filter")
