"""AnthropicBackend against a messages-API server on 127.0.0.1: what the SDK sends, how the
reply is read, retries, credentials and the preflight."""

from __future__ import annotations

import base64
import logging

import pytest

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")

from cigeval.backends.anthropic_backend import AnthropicBackend, to_anthropic_messages
from cigeval.backends.resolve import resolve_backend
from cigeval.config import RunConfig
from cigeval.errors import BackendError, ConfigError, PreflightError
from cigeval.messages import GenerationSettings, Message, ModelRequest
from tests.anthropic_server import FakeAnthropicServer

from .support import SECRET_KEY, fast_policy, image_request, make_image


@pytest.fixture(autouse=True)
def _clean_anthropic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def fast_backend(url: str, api_key: str | None = None, **policy: object) -> AnthropicBackend:
    return AnthropicBackend("claude-test", [url], api_key=api_key, policy=fast_policy(**policy))


async def test_system_text_apart_and_images_as_base64_blocks(
    anthropic_server: FakeAnthropicServer,
) -> None:
    anthropic_server.replies = ['{"score": 7}']
    red, blue = make_image((255, 0, 0)), make_image((0, 0, 255), (5, 9))
    settings = GenerationSettings(temperature=0.3, max_tokens=77, seed=123, top_p=0.9)
    request = image_request("Compare these.", (red, blue), settings=settings)

    backend = fast_backend(anthropic_server.url)
    response = await backend.complete(request)
    await backend.aclose()

    [sent] = anthropic_server.requests
    assert sent.path == "/v1/messages"
    body = sent.body
    assert body["system"] == "You are a judge."
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert sent.blocks("text") == [{"type": "text", "text": "Compare these."}]
    images = sent.blocks("image")
    assert [i["source"]["media_type"] for i in images] == ["image/png", "image/png"]
    assert [base64.b64decode(i["source"]["data"]) for i in images] == [red.data, blue.data]
    assert (body["model"], body["max_tokens"]) == ("claude-test", 77)
    # API version 2026-10-21 refuses sampling settings and has no seed: none is sent
    assert not {"temperature", "top_p", "top_k", "seed"} & set(body)
    assert sent.key == "EMPTY"  # a server of your own, no key set
    assert response.text == '{"score": 7}'
    assert response.model == "claude-fake-20250101"  # as the server reported it
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (13, 5)
    assert response.finish_reason == "stop"  # end_turn, in the one vocabulary
    assert response.endpoint == anthropic_server.url


def test_consecutive_turns_of_one_role_merge_and_assistant_turns_stay_text() -> None:
    messages = (
        Message.text("system", "rules"),
        Message.text("user", "first"),
        Message.text("user", "second"),
        Message.text("assistant", "an answer"),
        Message.text("user", "again"),
    )
    system, turns = to_anthropic_messages(messages)
    assert system == "rules"
    assert [(t["role"], [b["text"] for b in t["content"]]) for t in turns] == [
        ("user", ["first", "second"]),
        ("assistant", ["an answer"]),
        ("user", ["again"]),
    ]


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [("max_tokens", "length"), ("model_context_window_exceeded", "length"), ("refusal", None)],
)
async def test_stop_reasons_map_to_the_vocabulary(stop_reason: str, expected: str | None) -> None:
    with FakeAnthropicServer(["cut"], stop_reason=stop_reason) as server:
        response = await fast_backend(server.url).complete(image_request())
    assert response.finish_reason == (expected or "content_filter")


async def test_transient_errors_are_retried_and_client_errors_are_not(
    anthropic_server: FakeAnthropicServer,
) -> None:
    anthropic_server.fail(0, "429")
    anthropic_server.fail(1, "529")  # Anthropic's "overloaded"
    response = await fast_backend(anthropic_server.url).complete(image_request())
    assert response.text == "ok" and len(anthropic_server.requests) == 3

    anthropic_server.fail(3, "400")
    with pytest.raises(BackendError, match="HTTP 400") as info:
        await fast_backend(anthropic_server.url).complete(image_request())
    assert "after 1 attempt" in str(info.value)
    assert len(anthropic_server.requests) == 4


async def test_the_key_never_leaks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeAnthropicServer(required_key="another-key") as server:
        backend = fast_backend(server.url, api_key=SECRET_KEY)
        with pytest.raises(BackendError) as info:
            await backend.complete(image_request())
        assert server.requests[0].key == SECRET_KEY
    error = info.value
    assert "ANTHROPIC_API_KEY" in str(error)
    for text in [str(error), repr(error), repr(backend), str(vars(backend)), caplog.text]:
        assert SECRET_KEY not in text
    assert error.__cause__ is None and error.__context__ is None


def test_anthropic_itself_needs_a_key_named_in_the_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        resolve_backend("anthropic:claude-sonnet-4-5")


async def test_url_from_environment_is_used_and_recorded(
    anthropic_server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url + "/v1")  # /v1 is accepted
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_KEY)
    backend = resolve_backend("anthropic:claude-test", run_config=RunConfig(use_cache=False))
    response = await backend.complete(image_request())
    assert backend.endpoint == anthropic_server.url == response.endpoint  # type: ignore[attr-defined]
    assert anthropic_server.requests[0].key == SECRET_KEY


async def test_spec_with_url_and_assistant_images_are_refused(
    anthropic_server: FakeAnthropicServer,
) -> None:
    backend = resolve_backend(f"anthropic:claude-test@{anthropic_server.url}")
    assert backend.identity == "anthropic:claude-test"
    bad = ModelRequest((Message("assistant", (image_request().messages[1].parts[0],)),))
    await backend.complete(bad)  # text only: fine
    with_image = image_request(images=(make_image(),))
    parts = with_image.messages[1].parts
    with pytest.raises(BackendError, match="assistant messages cannot carry images"):
        to_anthropic_messages((Message("assistant", parts),))


async def test_preflight_finds_a_known_model_by_name() -> None:
    with FakeAnthropicServer(known_models=["claude-test"]) as server:
        await fast_backend(server.url).preflight()
        assert server.model_lookups == ["claude-test"] and server.requests == []
        with pytest.raises(PreflightError, match="does not know the model 'claude-other'"):
            await AnthropicBackend("claude-other", [server.url]).preflight()


async def test_preflight_without_a_models_route_asks_for_one_token(
    anthropic_server: FakeAnthropicServer,
) -> None:
    await fast_backend(anthropic_server.url).preflight()
    [probe] = anthropic_server.requests
    assert probe.body["max_tokens"] == 1


async def test_preflight_names_the_key_variable_and_the_unreachable_server() -> None:
    with FakeAnthropicServer(required_key="right") as server:
        with pytest.raises(PreflightError, match=r"refused the API key.*ANTHROPIC_API_KEY"):
            await fast_backend(server.url, api_key="wrong").preflight()
        url = server.url
    with pytest.raises(PreflightError, match="cannot be reached"):
        await fast_backend(url).preflight()


async def test_every_http_attempt_is_counted_retries_included(
    anthropic_server: FakeAnthropicServer,
) -> None:
    from cigeval.backends.attempts import counting_http_attempts

    anthropic_server.fail(0, "500")
    anthropic_server.fail(1, "429")
    with counting_http_attempts() as counter:
        await fast_backend(anthropic_server.url).complete(image_request())
    assert counter.count == len(anthropic_server.requests) == 3
