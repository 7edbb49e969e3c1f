"""Gemini through Google's OpenAI-compatible endpoint: ``gemini:<model>`` and
``gemini:<model>@URL``.

Google serves the Gemini API in the OpenAI chat-completions form at
``https://generativelanguage.googleapis.com/v1beta/openai``, so this provider is
:class:`OpenAIBackend` with Google's URL and key: no SDK beyond ``openai`` is needed. The key
comes from ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``); images go as data URIs, which the
endpoint accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from cigeval.backends._spec import first_env, model_and_urls, url_list
from cigeval.backends.openai_backend import PLACEHOLDER_KEY, OpenAIBackend
from cigeval.backends.policy import CallPolicy
from cigeval.config import RunConfig
from cigeval.errors import ConfigError

#: Google's OpenAI-compatible Gemini endpoint.
GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/openai"
#: Where the key is looked for, in order.
KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


class GeminiBackend(OpenAIBackend):
    """A Gemini model behind Google's OpenAI-compatible endpoint (or a server given by URL).

    ``base_urls`` default to Google's endpoint; ``api_key`` to ``$GEMINI_API_KEY`` (then
    ``$GOOGLE_API_KEY``). Every other setting is :class:`OpenAIBackend`'s. ``--batch`` does
    not apply: the OpenAI Batch API path is not checked against Google's endpoint.
    """

    provider = "gemini"
    key_variable = "GEMINI_API_KEY"
    batch_api = False

    def __init__(
        self,
        model: str,
        base_urls: Sequence[str] | str | None = None,
        *,
        api_key: str | None = None,
        **settings: Any,
    ) -> None:
        urls = url_list(base_urls) if base_urls else []
        official = not urls or any(
            urlsplit(u).hostname == "generativelanguage.googleapis.com" for u in urls
        )
        key = api_key or first_env(*KEY_VARIABLES)
        if not key:
            if official:
                raise ConfigError(
                    f"no API key for the Gemini model {model!r}: set the {self.key_variable} "
                    "environment variable (a key from Google AI Studio), or point at an "
                    "OpenAI-compatible server with 'gemini:<model>@http://host:port/v1'"
                )
            key = PLACEHOLDER_KEY
        settings.setdefault("max_tokens_param", "max_tokens")
        super().__init__(model, urls or [GEMINI_URL], api_key=key, **settings)


def from_spec(
    rest: str, *, base_url: str | Sequence[str] | None = None, run_config: RunConfig | None = None
) -> GeminiBackend:
    """The backend of a ``gemini:<model>[@URL,URL...]`` spec (the part after the prefix)."""
    name, urls = model_and_urls("gemini", rest, base_url)
    return GeminiBackend(name, urls or None, policy=CallPolicy.from_run_config(run_config))
