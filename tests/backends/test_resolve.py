"""resolve_backend: spec strings, instances, langchain models, run-config limits and caching."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cigeval.backends import (
    CachedBackend,
    LangChainBackend,
    OpenAIBackend,
    ScriptedBackend,
    resolve_backend,
)
from cigeval.config import RunConfig
from cigeval.errors import ConfigError
from cigeval.testing.openai_server import FakeOpenAIServer

from .support import SECRET_KEY, image_request

NO_CACHE = RunConfig(use_cache=False)


def test_backend_instances_are_returned_as_they_are(tmp_path: Path) -> None:
    scripted = ScriptedBackend(["x"])
    assert resolve_backend(scripted) is scripted
    assert resolve_backend(scripted, run_config=RunConfig(cache_dir=tmp_path)) is scripted


def test_openai_spec_with_one_or_several_urls() -> None:
    backend = resolve_backend("openai:qwen2-vl@http://127.0.0.1:8000/v1", run_config=NO_CACHE)
    assert isinstance(backend, OpenAIBackend)
    assert backend.identity == "openai:qwen2-vl"
    assert backend.base_urls == ["http://127.0.0.1:8000/v1"]
    several = resolve_backend(
        "openai:org/model@v2@http://a:8000/v1, http://b:8000/v1", run_config=NO_CACHE
    )
    assert isinstance(several, OpenAIBackend)
    assert several.model == "org/model@v2"
    assert several.base_urls == ["http://a:8000/v1", "http://b:8000/v1"]


def test_base_url_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = resolve_backend(
        "openai:m", base_url="http://h:1/v1,http://h:2/v1", run_config=NO_CACHE
    )
    assert isinstance(backend, OpenAIBackend)
    assert backend.base_urls == ["http://h:1/v1", "http://h:2/v1"]
    with pytest.raises(ConfigError, match="given twice"):
        resolve_backend("openai:m@http://h:1/v1", base_url="http://h:2/v1")
    with pytest.raises(ConfigError, match="http://"):
        resolve_backend("openai:m", base_url="h:1/v1")


def test_openai_without_key_or_url_explains_itself() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_backend("openai:gpt-4o-2024-05-13")


def test_run_config_limits_reach_the_openai_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    config = RunConfig(
        timeout_s=7,
        max_retries=2,
        concurrency=3,
        requests_per_minute=100,
        tokens_per_minute=5000,
        use_cache=False,
    )
    backend = resolve_backend("openai:gpt-4o", run_config=config)
    assert isinstance(backend, OpenAIBackend)
    policy = backend.policy
    assert (policy.timeout_s, policy.max_retries) == (7, 2)
    assert policy.max_in_flight == backend.call_limit.limit == 9  # three calls per sample
    assert policy.rate_limiter is not None
    assert policy.rate_limiter.requests_per_minute == 100
    assert policy.rate_limiter.tokens_per_minute == 5000
    explicit = resolve_backend(
        "openai:gpt-4o", run_config=RunConfig(max_calls_in_flight=4, use_cache=False)
    )
    assert isinstance(explicit, OpenAIBackend)
    assert explicit.call_limit.limit == 4 and explicit.policy.rate_limiter is None


async def test_cache_wrapping(tmp_path: Path) -> None:
    with FakeOpenAIServer(["cached reply"]) as server:
        spec = f"openai:fake-model@{server.base_url}"
        backend = resolve_backend(spec, run_config=RunConfig(cache_dir=tmp_path))
        assert isinstance(backend, CachedBackend)
        assert backend.identity == "openai:fake-model"
        await backend.complete(image_request())
        again = await resolve_backend(spec, run_config=RunConfig(cache_dir=tmp_path)).complete(
            image_request()
        )
        assert again.cached and len(server.requests) == 1
    assert not isinstance(resolve_backend(spec), CachedBackend)
    assert not isinstance(resolve_backend(spec, run_config=NO_CACHE), CachedBackend)
    unset = RunConfig(cache_dir=None)
    assert not isinstance(resolve_backend(spec, run_config=unset), CachedBackend)


@pytest.mark.parametrize(
    "spec", ["gpt-4o", "claude:opus", "openai:", "", "openai:@http://h/v1", "hf:"]
)
def test_bad_specs_list_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_backend(spec, run_config=NO_CACHE)
    assert "openai:<model>@http://host:8000/v1" in str(info.value) and "hf:" in str(info.value)


def test_other_objects_are_refused() -> None:
    with pytest.raises(ConfigError, match="int"):
        resolve_backend(42)


def test_langchain_models_are_adapted(tmp_path: Path) -> None:
    from langchain_core.language_models import FakeListChatModel

    fake = FakeListChatModel(responses=["hi"])
    backend = resolve_backend(fake, run_config=RunConfig(cache_dir=tmp_path))
    # A fake has no model name, so no stable identity: it is never cached.
    assert isinstance(backend, LangChainBackend)
    assert backend.chat_model is fake

    class NamedFake(FakeListChatModel):
        model_name: str = "gpt-4o-mini"

    named = resolve_backend(NamedFake(responses=["hi"]), run_config=RunConfig(cache_dir=tmp_path))
    assert isinstance(named, CachedBackend)
    assert named.identity == "langchain:gpt-4o-mini"


def test_hf_spec_builds_an_hf_backend_lazily(tmp_path: Path) -> None:
    from cigeval.backends import HFBackend

    backend = resolve_backend(f"hf:{tmp_path}", run_config=NO_CACHE)
    assert isinstance(backend, HFBackend)
    assert backend.identity == f"hf:{tmp_path}"


def test_importing_backends_loads_no_heavy_library() -> None:
    # The cigeval package itself may load langgraph (the agent); the backends add nothing.
    code = (
        "import sys, cigeval\n"
        "before = set(sys.modules)\n"
        "import cigeval.backends, cigeval.backends.resolve\n"
        "added = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "heavy = {'torch', 'transformers', 'langchain_core', 'langgraph', 'openai'}\n"
        "print(sorted(added & heavy), sorted({'torch', 'transformers'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[] []"
