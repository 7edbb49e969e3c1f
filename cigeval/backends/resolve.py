"""Turning what a user names as "the model" into a :class:`Backend`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cigeval.backends.base import Backend
from cigeval.backends.cache import CachedBackend, ResponseCache
from cigeval.backends.registry import ACCEPTED_FORMS, get_backend
from cigeval.errors import ConfigError

if TYPE_CHECKING:
    from cigeval.config import RunConfig


def resolve_backend(
    model: Any,
    *,
    base_url: str | Sequence[str] | None = None,
    run_config: RunConfig | None = None,
) -> Backend:
    """The backend for ``model``: a spec string, a langchain chat model or a Backend.

    Spec strings are ``<provider>:<model>``: ``openai:<model>``,
    ``openai:<model>@http://host:8000/v1`` (or several URLs joined by commas),
    ``hf:<name or local path>``, or any provider added with :func:`register_backend`.
    ``base_url`` is the same as the ``@`` part (give one or the other). ``run_config``
    supplies the timeout, retries, in-flight and rate limits of API backends, and the answer
    cache: models named by a string, and langchain models that report a model name, are wrapped in
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
    try:
        factory = get_backend(provider.strip())
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in the spec {model!r}); accepted: {ACCEPTED_FORMS}") from None
    backend = factory(rest.strip(), base_url=base_url, run_config=run_config)
    return _with_cache(backend, run_config)


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
