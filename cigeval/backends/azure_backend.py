"""Azure OpenAI through the openai SDK's Azure client: ``azure:<deployment>`` and
``azure:<deployment>@https://<resource>.openai.azure.com``.

The deployment name is what requests name (Azure routes ``/openai/deployments/<deployment>``);
the model behind it is what the replies report, and is recorded as the served model. The
resource URL comes from the spec, ``base_url`` or ``AZURE_OPENAI_ENDPOINT``; the key from
``AZURE_OPENAI_API_KEY`` (or a Microsoft Entra ID token in ``AZURE_OPENAI_AD_TOKEN``); the
API version from ``AZURE_OPENAI_API_VERSION`` or ``OPENAI_API_VERSION``, else
:data:`DEFAULT_API_VERSION`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from cigeval._caller import in_callers_words
from cigeval.backends._retrying import PREFLIGHT_TIMEOUT_S, error_message, preflight_within
from cigeval.backends._spec import first_env, model_and_urls, public_url, url_list
from cigeval.backends.openai_backend import OpenAIBackend
from cigeval.backends.policy import CallPolicy
from cigeval.config import RunConfig
from cigeval.errors import ConfigError, PreflightError

#: The API version asked for when none is set: the generally available data-plane version
#: of 2024-10-21 (chat completions with images and ``max_completion_tokens``).
DEFAULT_API_VERSION = "2024-10-21"


class AzureOpenAIBackend(OpenAIBackend):
    """A deployment of an Azure OpenAI resource.

    ``endpoints``: the resource URL, or several (round robin); default
    ``$AZURE_OPENAI_ENDPOINT``. ``api_key``: default ``$AZURE_OPENAI_API_KEY``;
    ``$AZURE_OPENAI_AD_TOKEN`` is used when no key is set. ``api_version``: see the module
    docstring. Every other setting is :class:`OpenAIBackend`'s. ``--batch`` does not apply.
    """

    provider = "azure"
    key_variable = "AZURE_OPENAI_API_KEY"
    batch_api = False
    encoded_body = False  # the Azure client reads the body's model to route the request

    def __init__(
        self,
        deployment: str,
        endpoints: Sequence[str] | str | None = None,
        *,
        api_key: str | None = None,
        api_version: str | None = None,
        **settings: Any,
    ) -> None:
        urls = url_list(endpoints) if endpoints else []
        if not urls and os.environ.get("AZURE_OPENAI_ENDPOINT"):
            urls = url_list(os.environ["AZURE_OPENAI_ENDPOINT"])
        if not urls:
            raise ConfigError(
                f"no Azure OpenAI resource for the deployment {deployment!r}: set the "
                "AZURE_OPENAI_ENDPOINT environment variable or write "
                "'azure:<deployment>@https://<resource>.openai.azure.com'"
            )
        key = api_key or os.environ.get(self.key_variable)
        token = None if key else os.environ.get("AZURE_OPENAI_AD_TOKEN")
        if not key and not token:
            raise ConfigError(
                f"no API key for the Azure OpenAI deployment {deployment!r}: set the "
                f"{self.key_variable} environment variable (or AZURE_OPENAI_AD_TOKEN for a "
                "Microsoft Entra ID token)"
            )
        self.api_version = (
            api_version
            or first_env("AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION")
            or DEFAULT_API_VERSION
        )
        self._uses_token = token is not None
        settings.setdefault("max_tokens_param", "max_completion_tokens")
        super().__init__(deployment, urls, api_key=key or token, **settings)

    def _new_client(self, url: str | None, timeout: float | None = None) -> openai.AsyncAzureOpenAI:
        credential = self._key.value
        return openai.AsyncAzureOpenAI(
            azure_endpoint=url or "",
            api_version=self.api_version,
            api_key=None if self._uses_token else credential,
            azure_ad_token=credential if self._uses_token else None,
            timeout=timeout or self.policy.timeout_s,
            max_retries=0,
            http_client=self._http_client(url),
        )

    async def preflight(self) -> None:
        """Check every resource answers a one-token request to the deployment, within
        seconds (the data plane has no listing of deployments). Raises PreflightError."""
        timeout = min(self.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        for url in self.base_urls:
            await preflight_within(
                self._preflight_deployment(url or ""), timeout, public_url(url or "")
            )

    async def _preflight_deployment(self, url: str) -> None:
        where = public_url(url)
        timeout = min(self.policy.timeout_s, PREFLIGHT_TIMEOUT_S)
        client = self._new_client(url, timeout)
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": "Reply with OK."}],
            self.max_tokens_param: 1,
        }
        problem: str | None = None
        try:
            await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            problem = (
                f"the Azure OpenAI resource at {where} refused the credentials (HTTP "
                f"{exc.status_code}: {self.redact(error_message(exc))}); set "
                f"{self.key_variable} to a key of that resource"
            )
        except openai.NotFoundError as exc:
            problem = (
                f"the Azure OpenAI resource at {where} has no deployment {self.model!r} "
                f"({self.redact(error_message(exc))}): name a deployment after 'azure:' (not "
                "the model), and check the resource URL and the API version "
                f"{self.api_version}"
            )
        except openai.APITimeoutError:
            problem = f"the Azure OpenAI resource at {where} did not answer within {timeout:g} s"
        except openai.APIConnectionError as exc:
            problem = (
                f"the Azure OpenAI resource at {where} cannot be reached "
                f"({self.redact(str(exc))}); check AZURE_OPENAI_ENDPOINT or the URL after '@'"
            )
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                problem = (
                    f"the Azure OpenAI resource at {where} answered HTTP {exc.status_code} "
                    f"({self.redact(error_message(exc))}); try again later, or pass "
                    f"{in_callers_words('--no-preflight', 'preflight=False')} to start anyway"
                )
            # any other 4xx (429, a refused one-token request) proves the deployment is there
        finally:
            await client.close()
        if problem is not None:
            raise PreflightError(problem)


def from_spec(
    rest: str, *, base_url: str | Sequence[str] | None = None, run_config: RunConfig | None = None
) -> AzureOpenAIBackend:
    """The backend of an ``azure:<deployment>[@URL,URL...]`` spec (the part after the prefix)."""
    name, urls = model_and_urls("azure", rest, base_url)
    return AzureOpenAIBackend(name, urls or None, policy=CallPolicy.from_run_config(run_config))
