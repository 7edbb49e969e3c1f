"""OpenAIBackend against a real HTTP server on 127.0.0.1: payloads, retries, replicas, secrets."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

from cigeval._caller import command_line
from cigeval.backends import OpenAIBackend, RateLimiter
from cigeval.errors import BackendError, ConfigError
from cigeval.messages import GenerationSettings, Message, ModelRequest
from cigeval.testing.openai_server import FakeOpenAIServer

from .support import SECRET_KEY, fast_policy, image_request, make_image


def fast_backend(*urls: str, **policy: object) -> OpenAIBackend:
    """A backend with tiny backoff so retry tests stay fast."""
    return OpenAIBackend("fake-model", list(urls), policy=fast_policy(**policy))


async def test_sends_texts_images_and_settings_exactly(openai_server: FakeOpenAIServer) -> None:
    openai_server.replies = ["Score: 7"]
    red, blue = make_image((255, 0, 0)), make_image((0, 0, 255), (5, 9))
    settings = GenerationSettings(temperature=0.3, max_tokens=77, seed=123, top_p=0.9)
    request = image_request("Compare these.", (red, blue), settings=settings)

    response = await fast_backend(openai_server.base_url).complete(request)

    assert response.text == "Score: 7"
    assert response.model == "fake-model"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (11, 7)
    assert response.latency_s > 0 and not response.cached
    [sent] = openai_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.messages[0] == {"role": "system", "content": "You are a judge."}
    assert sent.messages[1]["role"] == "user"
    assert sent.texts(role="user") == ["Compare these."]
    assert sent.image_urls() == [red.data_uri(), blue.data_uri()]
    body = sent.body
    assert body["model"] == "fake-model"
    assert (body["temperature"], body["max_tokens"], body["seed"], body["top_p"]) == (
        0.3,
        77,
        123,
        0.9,
    )
    assert "max_completion_tokens" not in body


async def test_unset_seed_and_top_p_are_not_sent(openai_server: FakeOpenAIServer) -> None:
    settings = GenerationSettings(temperature=0.0, seed=None, top_p=None)
    await fast_backend(openai_server.base_url).complete(image_request(settings=settings))
    body = openai_server.requests[0].body
    assert "seed" not in body and "top_p" not in body
    assert body["temperature"] == 0.0


def test_official_endpoint_uses_max_completion_tokens() -> None:
    backend = OpenAIBackend("gpt-4o", api_key=SECRET_KEY)
    body = backend.payload(image_request(settings=GenerationSettings(max_tokens=12)))
    assert body["max_completion_tokens"] == 12 and "max_tokens" not in body


async def test_assistant_turns_are_text(openai_server: FakeOpenAIServer) -> None:
    request = ModelRequest(
        (
            Message.text("user", "plan?"),
            Message.text("assistant", "tool: grounding"),
            Message.text("user", "now judge"),
        )
    )
    await fast_backend(openai_server.base_url).complete(request)
    roles = [m["role"] for m in openai_server.requests[0].messages]
    assert roles == ["user", "assistant", "user"]
    assert openai_server.requests[0].messages[1]["content"] == "tool: grounding"


async def test_429_retry_honours_retry_after_ms(openai_server: FakeOpenAIServer) -> None:
    openai_server.replies = ["after the wait"]
    openai_server.fail(0, "429", retry_after_ms="300")
    started = time.monotonic()
    response = await fast_backend(openai_server.base_url).complete(image_request())
    assert response.text == "after the wait"
    assert len(openai_server.requests) == 2
    gap = openai_server.requests[1].received_at - openai_server.requests[0].received_at
    assert gap >= 0.29  # backoff alone would be ~0.01 s: the header decided the wait
    assert time.monotonic() - started >= 0.29


async def test_429_retry_honours_retry_after_seconds(openai_server: FakeOpenAIServer) -> None:
    openai_server.fail(0, "429", retry_after="0.2")
    await fast_backend(openai_server.base_url).complete(image_request())
    gap = openai_server.requests[1].received_at - openai_server.requests[0].received_at
    assert gap >= 0.19


@pytest.mark.parametrize("fault", ["500", "garbage", "no_choices", "drop", "429"])
async def test_transient_failures_are_retried(openai_server: FakeOpenAIServer, fault: str) -> None:
    openai_server.replies = ["fine now"]
    openai_server.fail(0, fault)
    openai_server.fail(1, fault)
    response = await fast_backend(openai_server.base_url, max_retries=3).complete(image_request())
    assert response.text == "fine now"
    assert [r.fault for r in openai_server.requests] == [fault, fault, None]


@pytest.mark.parametrize("fault", ["400", "401"])
async def test_client_errors_are_not_retried(openai_server: FakeOpenAIServer, fault: str) -> None:
    openai_server.fail(0, fault, message="bad things")
    with pytest.raises(BackendError) as info:
        await fast_backend(openai_server.base_url, max_retries=5).complete(image_request())
    assert len(openai_server.requests) == 1
    message = str(info.value)
    assert f"HTTP {fault}" in message and "bad things" in message and "1 attempt" in message
    assert "openai:fake-model" in message and openai_server.base_url in message
    if fault == "401":
        assert "OPENAI_API_KEY" in message


async def test_gives_up_after_max_retries(openai_server: FakeOpenAIServer) -> None:
    for index in range(5):
        openai_server.fail(index, "500", message="overloaded")
    with pytest.raises(BackendError) as info:
        await fast_backend(openai_server.base_url, max_retries=2).complete(image_request())
    assert len(openai_server.requests) == 3
    message = str(info.value)
    assert "3 attempts" in message and "HTTP 500" in message and "overloaded" in message


async def test_timeout_is_per_attempt_and_retried() -> None:
    with FakeOpenAIServer(latency_s=0.5) as server:
        backend = fast_backend(server.base_url, timeout_s=0.1, max_retries=1)
        started = time.monotonic()
        with pytest.raises(BackendError, match="timed out"):
            await backend.complete(image_request())
        assert time.monotonic() - started < 1.0
        assert len(server.requests) == 2


async def test_round_robin_over_replicas() -> None:
    with FakeOpenAIServer(["from a"]) as a, FakeOpenAIServer(["from b"]) as b:
        backend = fast_backend(a.base_url, b.base_url)
        replies = [(await backend.complete(image_request())).text for _ in range(4)]
        assert replies == ["from a", "from b", "from a", "from b"]
        assert len(a.requests) == len(b.requests) == 2


async def test_retry_moves_to_the_next_replica() -> None:
    with FakeOpenAIServer(["from a"]) as a, FakeOpenAIServer(["from b"]) as b:
        a.fail(0, "500")
        backend = OpenAIBackend("fake-model", f"{a.base_url},{b.base_url}", policy=fast_policy())
        response = await backend.complete(image_request())
        assert response.text == "from b"
        assert len(a.requests) == 1 and len(b.requests) == 1


async def test_in_flight_limit_caps_concurrency() -> None:
    with FakeOpenAIServer(latency_s=0.05) as server:
        backend = fast_backend(server.base_url, max_in_flight=2)
        await asyncio.gather(*(backend.complete(image_request()) for _ in range(6)))
        assert len(server.requests) == 6
        assert server.max_concurrent == 2


async def test_rate_limiter_spaces_requests(openai_server: FakeOpenAIServer) -> None:
    limiter = RateLimiter(requests_per_minute=600)  # one request every 0.1 s
    backend = fast_backend(openai_server.base_url, rate_limiter=limiter)
    started = time.monotonic()
    await asyncio.gather(*(backend.complete(image_request()) for _ in range(5)))
    arrivals = sorted(r.received_at for r in openai_server.requests)
    assert len(arrivals) == 5
    # Request k may leave no earlier than k * 0.1 s after the start (later is fine).
    for k, arrived in enumerate(arrivals):
        assert arrived - started >= 0.1 * k - 0.005


def test_missing_key_for_openai_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as info:
        OpenAIBackend("gpt-4o")
    assert "base_url=" in str(info.value)  # from Python: the keyword, not the flag
    with command_line(), pytest.raises(ConfigError) as from_cli:
        OpenAIBackend("gpt-4o")
    assert "--base-url" in str(from_cli.value)


async def test_local_server_needs_no_key(openai_server: FakeOpenAIServer) -> None:
    await OpenAIBackend("m", [openai_server.base_url]).complete(image_request())
    assert openai_server.requests[0].header("authorization") == "Bearer EMPTY"


async def test_key_and_url_from_environment(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    await OpenAIBackend("m").complete(image_request())
    assert openai_server.requests[0].header("authorization") == f"Bearer {SECRET_KEY}"


async def test_key_never_leaks(
    openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # Servers like to echo the key back in authentication errors.
    openai_server.fail(0, "500", message=f"upstream rejected key {SECRET_KEY}")
    openai_server.fail(1, "401", message=f"Incorrect API key provided: {SECRET_KEY}")
    backend = OpenAIBackend(
        "fake-model", [openai_server.base_url], api_key=SECRET_KEY, policy=fast_policy()
    )
    with pytest.raises(BackendError) as info:
        await backend.complete(image_request())
    assert openai_server.requests[0].header("authorization") == f"Bearer {SECRET_KEY}"
    error = info.value
    texts = [str(error), repr(error), repr(backend), str(vars(backend)), caplog.text]
    texts += [str(e) for e in (error.__cause__, error.__context__) if e is not None]
    for text in texts:
        assert SECRET_KEY not in text
    assert "***" in str(error)
    assert error.__cause__ is None and error.__context__ is None


async def test_backend_survives_a_new_event_loop(openai_server: FakeOpenAIServer) -> None:
    backend = fast_backend(openai_server.base_url)
    await backend.complete(image_request())

    def in_another_loop() -> str:
        return asyncio.run(backend.complete(image_request())).text

    assert await asyncio.to_thread(in_another_loop) == "ok"
    assert len(openai_server.requests) == 2


async def test_each_answer_names_its_replica_and_finish_reason() -> None:
    with (
        FakeOpenAIServer(["a"], finish_reason="length") as one,
        FakeOpenAIServer(["b"], finish_reason="stop") as two,
    ):
        urls = [one.base_url, two.base_url]
        backend = OpenAIBackend("m", urls, api_key="k")
        replies = [await backend.complete(image_request()) for _ in range(2)]
        assert backend.endpoint == ",".join(sorted(urls))
        await backend.aclose()
    assert [(r.text, r.finish_reason, r.endpoint) for r in replies] == [
        ("a", "length", urls[0]),
        ("b", "stop", urls[1]),
    ]


async def test_a_servers_own_spelling_of_the_finish_reason_is_normalised() -> None:
    with FakeOpenAIServer(
        ["cut", "fine"], finish_reason=lambda t: "MAX_TOKENS" if t == "cut" else "eos"
    ) as server:
        backend = OpenAIBackend("m", [server.base_url], api_key="k")
        replies = [await backend.complete(image_request()) for _ in range(2)]
        await backend.aclose()
    assert [r.finish_reason for r in replies] == ["length", "stop"]


def test_the_body_is_the_json_the_sdk_would_send_with_images_shared() -> None:
    red, blue = make_image((255, 0, 0)), make_image((0, 0, 255), (5, 9))
    settings = GenerationSettings(temperature=0.3, max_tokens=77, seed=123, top_p=0.9)
    request = image_request("Compare \u00e9 these \u2713.", (red, blue, red), settings=settings)
    backend = fast_backend("http://127.0.0.1:9/v1")
    # the standard json module with the SDK's own settings: what the SDK sent before
    expected = json.dumps(
        backend.payload(request), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode()
    assert backend.request_body(request) == expected
    chunks = backend.request_chunks(request)
    shared = [chunk for chunk in chunks if chunk.startswith(b'"data:')]
    assert [c is i.data_uri_json for c, i in zip(shared, (red, blue, red), strict=True)] == [
        True
    ] * 3
    # another request showing the image reuses the same bytes, copying nothing
    other = backend.request_chunks(image_request("Again.", (blue,)))
    assert any(chunk is blue.data_uri_json for chunk in other)


def test_a_lone_surrogate_is_sent_escaped() -> None:
    backend = fast_backend("http://127.0.0.1:9/v1")
    request = image_request("half \ud800 pair")
    body = backend.request_body(request)  # the standard json module would fail to encode it
    assert json.loads(body)["messages"][1]["content"] == "half \ud800 pair"


async def test_the_body_goes_out_with_its_length_not_chunked(
    openai_server: FakeOpenAIServer,
) -> None:
    red = make_image((255, 0, 0), (40, 30))
    request = image_request("Judge.", (red,))
    backend = fast_backend(openai_server.base_url)
    await backend.complete(request)
    [sent] = openai_server.requests
    assert sent.header("Content-Length") == str(len(backend.request_body(request)))
    assert sent.header("Transfer-Encoding") is None
    assert sent.image_urls() == [red.data_uri()]
