"""LiteLLMBackend: LiteLLM writes cigeval's messages in each provider's form, against servers
on 127.0.0.1 (an OpenAI-compatible one and an Anthropic messages one)."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("litellm", reason="the litellm extra is not installed")

from cigeval.backends.litellm_backend import LiteLLMBackend
from cigeval.backends.resolve import resolve_backend
from cigeval.errors import BackendError, ConfigError, PreflightError
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.anthropic_server import FakeAnthropicServer

from .support import SECRET_KEY, fast_policy, image_request, make_image


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def fast(model: str, url: str, api_key: str | None = None, **policy: object) -> LiteLLMBackend:
    return LiteLLMBackend(model, [url], api_key=api_key, policy=fast_policy(**policy))


async def test_openai_form_to_a_compatible_server(openai_server: FakeOpenAIServer) -> None:
    openai_server.replies = ["seven"]
    image = make_image()
    backend = resolve_backend(f"litellm:openai/fake-model@{openai_server.base_url}")
    response = await backend.complete(image_request(images=(image,)))
    [sent] = openai_server.requests
    assert sent.image_urls() == [image.data_uri()]
    assert sent.texts(role="system") == ["You are a judge."]
    assert sent.body["model"] == "fake-model" and sent.body["seed"] == 0
    assert backend.identity == "litellm:openai/fake-model"
    assert (response.text, response.model) == ("seven", "fake-model")
    assert response.finish_reason == "stop"
    assert response.endpoint == openai_server.base_url == backend.endpoint  # type: ignore[attr-defined]


async def test_anthropic_form_with_images_as_base64_blocks() -> None:
    image = make_image((10, 200, 10))
    with FakeAnthropicServer(["fine"], stop_reason="max_tokens") as server:
        response = await fast("anthropic/claude-test", server.url).complete(
            image_request(images=(image,))
        )
    [sent] = server.requests
    assert sent.path == "/v1/messages" and sent.body["model"] == "claude-test"
    [block] = sent.blocks("image")
    assert base64.b64decode(block["source"]["data"]) == image.data
    assert "You are a judge." in str(sent.body["system"])
    assert "seed" not in sent.body  # dropped: the messages API has none
    assert (response.model, response.finish_reason) == ("claude-fake-20250101", "length")


def test_missing_credentials_and_unknown_providers_are_named() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        resolve_backend("litellm:anthropic/claude-sonnet-4-5")
    with pytest.raises(ConfigError, match="write the provider first"):
        resolve_backend("litellm:no-such-model-anywhere")


async def test_retries_and_client_errors(openai_server: FakeOpenAIServer) -> None:
    openai_server.fail(0, "429", retry_after="0")
    backend = fast("openai/fake-model", openai_server.base_url)
    assert (await backend.complete(image_request())).text == "ok"
    assert len(openai_server.requests) == 2
    openai_server.fail(2, "400", message=f"bad request from key {SECRET_KEY}")
    keyed = fast("openai/fake-model", openai_server.base_url, api_key=SECRET_KEY)
    with pytest.raises(BackendError, match="HTTP 400") as info:
        await keyed.complete(image_request())
    assert SECRET_KEY not in str(info.value) and SECRET_KEY not in repr(keyed)
    assert len(openai_server.requests) == 3


async def test_preflight_names_refused_keys_and_unreachable_servers() -> None:
    with FakeAnthropicServer(required_key="right") as server:
        await fast("anthropic/claude-test", server.url, api_key="right").preflight()
        assert server.requests[-1].body["max_tokens"] == 1
        with pytest.raises(PreflightError, match=r"refused the credentials.*ANTHROPIC_API_KEY"):
            await fast("anthropic/claude-test", server.url, api_key="wrong").preflight()
    with FakeAnthropicServer() as gone:
        url = gone.url  # nothing listens there once the block ends
    with pytest.raises(PreflightError, match="cannot be reached"):
        await fast("anthropic/claude-test", url).preflight()
