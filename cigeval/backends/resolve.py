"""Turning what a user names as "the model" into a :class:`Backend`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cigeval.backends.base import Backend
from cigeval.backends.cache import CachedBackend, ResponseCache
from cigeval.backends.limits import RateLimiter
from cigeval.config import RunConfig
from cigeval.errors import ConfigError

ACCEPTED_FORMS = (
    "'openai:<model>' (OpenAI; needs OPENAI_API_KEY), "
    "'openai:<model>@http://host:8000/v1' (any OpenAI-compatible server; several URLs "
    "separated by commas are served round robin), "
    "'hf:<hub id or local path>' (a local transformers model), "
    "a langchain BaseChatModel, or a cigeval Backend instance"
)


def resolve_backend(
    model: Any,
    *,
    base_url: str | Sequence[str] | None = None,
    run_config: RunConfig | None = None,
) -> Backend:
    """The backend for ``model``: a spec string, a langchain chat model or a Backend.

    Spec strings: ``openai:<model>``, ``openai:<model>@http://host:8000/v1`` (or several
    URLs joined by commas), ``hf:<name or local path>``. ``base_url`` is the same as the
    ``@`` part (give one or the other). ``run_config`` supplies the timeout, retries,
    in-flight and rate limits of API backends, and the answer cache: models named by a
    string, and langchain models that report a model name, are wrapped in
    :class:`CachedBackend` when ``run_config.use_cache`` and ``cache_dir`` are set. A Backend
    instance is returned as it is (wrap it in :class:`CachedBackend` yourself if wanted).
    """
    if isinstance(model, Backend):
        return model
    if _is_langchain_chat_model(model):
        from cigeval.backends.langchain_backend import LangChainBackend

        if base_url is not None:
            raise ConfigError("base_url applies to 'openai:' specs, not to a langchain model")
        adapter = LangChainBackend(model)
        return _with_cache(adapter, run_config) if adapter.has_model_name else adapter
    if not isinstance(model, str):
        raise ConfigError(
            f"cannot use {type(model).__name__} as a model; accepted: {ACCEPTED_FORMS}"
        )
    spec = model.strip()
    provider, sep, rest = spec.partition(":")
    if not sep or not rest.strip():
        raise ConfigError(
            f"model spec {model!r} has no provider prefix; accepted: {ACCEPTED_FORMS}"
        )
    provider = provider.strip().lower()
    rest = rest.strip()
    backend: Backend
    if provider == "openai":
        backend = _openai_backend(rest, base_url, run_config)
    elif provider == "hf":
        if base_url is not None:
            raise ConfigError("base_url applies to 'openai:' specs, not to 'hf:' models")
        from cigeval.backends.hf_backend import HFBackend

        backend = HFBackend(rest)
    else:
        raise ConfigError(
            f"unknown model provider {provider!r} in {model!r}; accepted: {ACCEPTED_FORMS}"
        )
    return _with_cache(backend, run_config)


def _openai_backend(
    rest: str, base_url: str | Sequence[str] | None, run_config: RunConfig | None
) -> Backend:
    from cigeval.backends.openai_backend import OpenAIBackend

    name, urls = _split_urls(rest)
    if base_url is not None:
        if urls:
            raise ConfigError(
                f"the server URL is given twice ('@' in {rest!r} and base_url); give one"
            )
        urls = _url_list(base_url)
    if not name:
        raise ConfigError(f"no model name in 'openai:{rest}'; accepted: {ACCEPTED_FORMS}")
    config = run_config or RunConfig()
    limiter = None
    if config.requests_per_minute or config.tokens_per_minute:
        limiter = RateLimiter(config.requests_per_minute, config.tokens_per_minute)
    return OpenAIBackend(
        name,
        urls or None,
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
        backoff_base_s=config.retry_backoff_s,
        max_in_flight=config.max_calls_in_flight or 2 * config.concurrency,
        rate_limiter=limiter,
    )


def _split_urls(rest: str) -> tuple[str, list[str]]:
    """``name@url1,url2`` -> (name, [url1, url2]); an ``@`` not followed by a URL stays."""
    for marker in ("@http://", "@https://"):
        at = rest.find(marker)
        if at >= 0:
            return rest[:at].strip(), _url_list(rest[at + 1 :])
    return rest, []


def _url_list(urls: str | Sequence[str]) -> list[str]:
    items = urls.split(",") if isinstance(urls, str) else list(urls)
    cleaned = [u.strip() for u in items if u and u.strip()]
    for url in cleaned:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"server URL {url!r} must start with http:// or https://")
    return cleaned


def _with_cache(backend: Backend, run_config: RunConfig | None) -> Backend:
    if run_config is None or not run_config.use_cache or run_config.cache_dir is None:
        return backend
    return CachedBackend(backend, ResponseCache(run_config.cache_dir))


def _is_langchain_chat_model(model: object) -> bool:
    """True for a langchain-core BaseChatModel, without importing langchain."""
    return any(
        cls.__name__ == "BaseChatModel" and cls.__module__.startswith("langchain_core.")
        for cls in type(model).__mro__
    )
