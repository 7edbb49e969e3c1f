"""Everything that talks to a model: the Backend protocol and its providers, limits and cache.

Importing this package loads neither torch, transformers nor langchain; the backends that
need them import them when they are built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cigeval.backends.base import Backend
from cigeval.backends.cache import CachedBackend, ResponseCache, cache_key
from cigeval.backends.langchain_backend import LangChainBackend
from cigeval.backends.limits import InFlightLimit, RateLimiter
from cigeval.backends.resolve import resolve_backend
from cigeval.backends.scripted import ScriptedBackend, ScriptExhausted

if TYPE_CHECKING:
    from cigeval.backends.hf_backend import HFBackend
    from cigeval.backends.openai_backend import OpenAIBackend

__all__ = [
    "Backend",
    "CachedBackend",
    "HFBackend",
    "InFlightLimit",
    "LangChainBackend",
    "OpenAIBackend",
    "RateLimiter",
    "ResponseCache",
    "ScriptExhausted",
    "ScriptedBackend",
    "cache_key",
    "resolve_backend",
]


def __getattr__(name: str) -> Any:
    # The openai client takes a noticeable time to import; load it on first use.
    if name == "OpenAIBackend":
        from cigeval.backends.openai_backend import OpenAIBackend

        return OpenAIBackend
    if name == "HFBackend":
        from cigeval.backends.hf_backend import HFBackend

        return HFBackend
    raise AttributeError(f"module 'cigeval.backends' has no attribute {name!r}")
