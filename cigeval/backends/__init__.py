"""Everything that talks to a model: the Backend protocol, its providers, limits and cache.

Models are named by spec strings ``<provider>:<model>`` (:func:`resolve_backend`); the
providers ``openai``, ``hf``, ``anthropic``, ``gemini``, ``azure`` and ``litellm`` are built in,
others are added with :func:`register_backend`. Importing this package loads neither the
openai client, the Anthropic SDK, LiteLLM, torch, transformers nor langchain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports
from cigeval.backends.attempts import note_http_attempt
from cigeval.backends.base import Backend, Preflight, backend_endpoint
from cigeval.backends.cache import (
    CachedBackend,
    ResponseCache,
    bypass_cached_answers,
    cache_key,
)
from cigeval.backends.limits import InFlightLimit, RateLimiter
from cigeval.backends.observers import CallObserver, observing
from cigeval.backends.registry import backend_names, get_backend, register_backend
from cigeval.backends.resolve import resolve_backend
from cigeval.backends.scripted import ScriptedBackend, ScriptExhausted

if TYPE_CHECKING:
    from cigeval.backends.anthropic_backend import AnthropicBackend
    from cigeval.backends.azure_backend import AzureOpenAIBackend
    from cigeval.backends.gemini_backend import GeminiBackend
    from cigeval.backends.hf_backend import HFBackend
    from cigeval.backends.langchain_backend import LangChainBackend
    from cigeval.backends.litellm_backend import LiteLLMBackend
    from cigeval.backends.openai_backend import OpenAIBackend
    from cigeval.backends.policy import CallPolicy

__all__ = [
    "AnthropicBackend",
    "AzureOpenAIBackend",
    "Backend",
    "CachedBackend",
    "CallObserver",
    "CallPolicy",
    "GeminiBackend",
    "HFBackend",
    "InFlightLimit",
    "LangChainBackend",
    "LiteLLMBackend",
    "OpenAIBackend",
    "Preflight",
    "RateLimiter",
    "ResponseCache",
    "ScriptExhausted",
    "ScriptedBackend",
    "backend_endpoint",
    "backend_names",
    "bypass_cached_answers",
    "cache_key",
    "get_backend",
    "note_http_attempt",
    "observing",
    "register_backend",
    "resolve_backend",
]

#: The provider modules load on first use (the openai client takes a noticeable time to import).
_LAZY = {
    "AnthropicBackend": "cigeval.backends.anthropic_backend",
    "AzureOpenAIBackend": "cigeval.backends.azure_backend",
    "GeminiBackend": "cigeval.backends.gemini_backend",
    "LiteLLMBackend": "cigeval.backends.litellm_backend",
    "OpenAIBackend": "cigeval.backends.openai_backend",
    "CallPolicy": "cigeval.backends.policy",
    "HFBackend": "cigeval.backends.hf_backend",
    "LangChainBackend": "cigeval.backends.langchain_backend",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
