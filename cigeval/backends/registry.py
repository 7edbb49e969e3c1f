"""The backend registry: model providers by the prefix of a model spec (``openai:``, ``hf:``,
``anthropic:``, ``gemini:``, ``azure:``, ``litellm:``).

A provider is a factory ``factory(model, *, base_url=None, run_config=None) -> Backend``
receiving the part of the spec after ``<provider>:``. The built-in providers are registered
lazily (the openai client and transformers load only when a spec names them); add your own
with :func:`register_backend` or a plugin's ``cigeval.backends`` entry point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from cigeval.errors import ConfigError
from cigeval.registry import Registry

if TYPE_CHECKING:
    from cigeval.backends.base import Backend
    from cigeval.config import RunConfig


class BackendFactory(Protocol):
    """Builds a backend from the model part of a spec."""

    def __call__(
        self,
        model: str,
        *,
        base_url: str | Sequence[str] | None = None,
        run_config: RunConfig | None = None,
    ) -> Backend:
        """The backend for ``model`` (the spec without its ``<provider>:`` prefix)."""
        ...


#: The spec forms of the built-in providers, quoted in errors about a model spec.
ACCEPTED_FORMS = (
    "'openai:<model>' (OpenAI; needs OPENAI_API_KEY), "
    "'openai:<model>@http://host:8000/v1' (any OpenAI-compatible server; several URLs "
    "separated by commas are served round robin), "
    "'anthropic:<model>' (Claude; needs ANTHROPIC_API_KEY), "
    "'gemini:<model>' (Gemini; needs GEMINI_API_KEY), "
    "'azure:<deployment>' (Azure OpenAI; needs AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT), "
    "'litellm:<provider>/<model>' (anything LiteLLM routes), each also as '<spec>@URL', "
    "'hf:<hub id or local path>' (a local transformers model), "
    "a langchain BaseChatModel, or a cigeval Backend instance"
)


def _as_factory(item: Any) -> BackendFactory:
    if not callable(item):
        raise ConfigError(f"{item!r} is not a backend factory (a callable returning a Backend)")
    factory: BackendFactory = item
    return factory


BACKENDS: Registry[BackendFactory] = Registry(
    "backend", entry_point_group="cigeval.backends", coerce=_as_factory
)
BACKENDS.register_lazy("openai", "cigeval.backends.openai_backend:from_spec")
BACKENDS.register_lazy("hf", "cigeval.backends.hf_backend:from_spec")
BACKENDS.register_lazy("anthropic", "cigeval.backends.anthropic_backend:from_spec")
BACKENDS.register_lazy("gemini", "cigeval.backends.gemini_backend:from_spec")
BACKENDS.register_lazy("azure", "cigeval.backends.azure_backend:from_spec")
BACKENDS.register_lazy("litellm", "cigeval.backends.litellm_backend:from_spec")


def register_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make ``name:<model>`` specs build backends with ``factory``."""
    BACKENDS.register(name, _as_factory(factory), replace=replace)


def get_backend(name: str) -> BackendFactory:
    """The factory of the provider ``name``; ConfigError listing the providers otherwise."""
    return BACKENDS.get(name)


def backend_names() -> list[str]:
    """The registered providers, e.g. ``['openai', 'hf', 'anthropic', ...]``."""
    return BACKENDS.names()
