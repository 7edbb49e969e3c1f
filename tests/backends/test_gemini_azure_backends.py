"""GeminiBackend and AzureOpenAIBackend: the OpenAI chat API under Google's and Azure's names,
against servers on 127.0.0.1 (URLs, keys, routes, preflights)."""

from __future__ import annotations

import pytest

from cigeval.backends.azure_backend import DEFAULT_API_VERSION, AzureOpenAIBackend
from cigeval.backends.batch.backend import batch_backends
from cigeval.backends.gemini_backend import GeminiBackend
from cigeval.backends.resolve import resolve_backend
from cigeval.config import RunConfig
from cigeval.errors import ConfigError, PreflightError
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.azure_server import FakeAzureServer

from .support import SECRET_KEY, image_request, make_image

_VARIABLES = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_API_VERSION",
    "OPENAI_API_VERSION",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)


def gemini_url(server: FakeOpenAIServer) -> str:
    return server.base_url.removesuffix("/v1") + "/v1beta/openai"


def test_gemini_needs_its_key_for_google_and_names_it() -> None:
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        resolve_backend("gemini:gemini-2.5-flash")


async def test_gemini_sends_the_key_images_and_max_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET_KEY)  # the second place a key is looked for
    image = make_image()
    with FakeOpenAIServer(["fine"], model="gemini-test-001") as server:
        url = gemini_url(server)
        backend = resolve_backend(f"gemini:gemini-test@{url}")
        response = await backend.complete(image_request(images=(image,)))
        await backend.aclose()  # type: ignore[attr-defined]
    [sent] = server.requests
    assert sent.path == "/v1beta/openai/chat/completions"
    assert sent.header("authorization") == f"Bearer {SECRET_KEY}"
    assert sent.image_urls() == [image.data_uri()]
    assert sent.body["model"] == "gemini-test" and "max_tokens" in sent.body
    assert backend.identity == "gemini:gemini-test"
    assert (response.model, response.finish_reason) == ("gemini-test-001", "stop")
    assert response.endpoint == url


async def test_gemini_preflight_reads_google_model_listing() -> None:
    with FakeOpenAIServer(served_models=["models/gemini-test", "models/gemini-pro"]) as server:
        await GeminiBackend("gemini-test", [gemini_url(server)]).preflight()
        with pytest.raises(PreflightError) as info:
            await GeminiBackend("gemini-other", [gemini_url(server)]).preflight()
    message = str(info.value)
    assert "it serves: gemini-pro, gemini-test." in message
    assert "after 'gemini:'" in message


def test_gemini_and_azure_are_not_sent_through_the_openai_batch_api(tmp_path) -> None:
    from cigeval.backends.batch import BatchCoordinator

    coordinator = BatchCoordinator.from_run_config(RunConfig(batch_state=tmp_path / "b.json"))
    gemini = GeminiBackend("g", ["http://127.0.0.1:9/v1beta/openai"])
    azure = AzureOpenAIBackend("d", "http://127.0.0.1:9", api_key="k")
    with pytest.raises(ConfigError, match="none of the judges"):
        batch_backends([gemini, azure], coordinator)


def test_azure_needs_a_resource_and_a_key_each_named() -> None:
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        resolve_backend("azure:judge-deployment")
    with pytest.raises(ConfigError, match="AZURE_OPENAI_API_KEY"):
        resolve_backend("azure:judge-deployment@https://example.openai.azure.com")


async def test_azure_calls_the_deployment_route_with_its_key_and_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SECRET_KEY)
    image = make_image()
    with FakeAzureServer(["fine"], model="gpt-4o-2024-11-20", required_key=SECRET_KEY) as server:
        endpoint = server.endpoint
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", endpoint)
        backend = resolve_backend("azure:judge-deployment", run_config=RunConfig(use_cache=False))
        response = await backend.complete(image_request(images=(image,)))
        await backend.aclose()  # type: ignore[attr-defined]
    assert server.calls == [("judge-deployment", DEFAULT_API_VERSION)]
    [sent] = server.requests
    assert sent.header("api-key") == SECRET_KEY and sent.header("authorization") is None
    assert sent.image_urls() == [image.data_uri()]
    assert "max_completion_tokens" in sent.body
    assert backend.identity == "azure:judge-deployment"
    assert response.model == "gpt-4o-2024-11-20"  # the model behind the deployment
    assert response.endpoint == endpoint == backend.endpoint  # type: ignore[attr-defined]
    assert SECRET_KEY not in repr(backend)


async def test_azure_entra_token_and_api_version_from_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "entra-token")
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    with FakeAzureServer() as server:
        await AzureOpenAIBackend("judge-deployment", server.endpoint).complete(image_request())
    assert server.calls == [("judge-deployment", "2025-01-01-preview")]
    assert server.requests[0].header("authorization") == "Bearer entra-token"


async def test_azure_preflight_names_a_missing_deployment_and_a_refused_key() -> None:
    with FakeAzureServer(required_key="right") as server:
        await AzureOpenAIBackend("judge-deployment", server.endpoint, api_key="right").preflight()
        assert server.requests[-1].body["max_completion_tokens"] == 1
        with pytest.raises(PreflightError, match="has no deployment 'gpt-4o'"):
            await AzureOpenAIBackend("gpt-4o", server.endpoint, api_key="right").preflight()
        with pytest.raises(PreflightError, match=r"refused.*AZURE_OPENAI_API_KEY"):
            await AzureOpenAIBackend("judge-deployment", server.endpoint, api_key="x").preflight()


@pytest.mark.parametrize(
    ("spec", "package"),
    [
        ("gemini:g@http://127.0.0.1:9/v1beta/openai", None),
        ("azure:d@http://127.0.0.1:9", None),
        ("anthropic:c@http://127.0.0.1:9", "anthropic"),
        ("litellm:openai/m@http://127.0.0.1:9/v1", "litellm"),
    ],
)
def test_limits_and_retries_come_from_the_run_settings(
    spec: str, package: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if package is not None:
        pytest.importorskip(package, reason=f"the {package} extra is not installed")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    settings = RunConfig(
        requests_per_minute=120, max_calls_in_flight=3, timeout_s=7, max_retries=2, cache_dir=None
    )
    backend = resolve_backend(spec, run_config=settings)
    policy = backend.policy  # type: ignore[attr-defined]
    assert policy.rate_limiter is not None
    assert policy.rate_limiter.requests_per_minute == 120
    assert backend.call_limit.limit == 3  # type: ignore[attr-defined]
    assert (policy.timeout_s, policy.max_retries) == (7, 2)
