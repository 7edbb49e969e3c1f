"""What the API providers share about a model spec: ``<model>[@URL,URL...]``, the URLs as they
are recorded (never with credentials)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from cigeval.backends.registry import ACCEPTED_FORMS
from cigeval.errors import ConfigError


def split_urls(rest: str) -> tuple[str, list[str]]:
    """``name@url1,url2`` -> (name, [url1, url2]); an ``@`` not followed by a URL stays."""
    for marker in ("@http://", "@https://"):
        at = rest.find(marker)
        if at >= 0:
            return rest[:at].strip(), url_list(rest[at + 1 :])
    return rest, []


def url_list(urls: str | Sequence[str]) -> list[str]:
    """URLs given as one comma-separated string or a list; ConfigError if one is not http(s)."""
    items = urls.split(",") if isinstance(urls, str) else list(urls)
    cleaned = [u.strip() for u in items if u and u.strip()]
    for url in cleaned:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"server URL {url!r} must start with http:// or https://")
    return cleaned


def model_and_urls(
    provider: str, rest: str, base_url: str | Sequence[str] | None
) -> tuple[str, list[str]]:
    """The model name and server URLs of ``<provider>:<rest>``; ``base_url`` is the same as
    the ``@`` part (ConfigError when both are given, or when the name is missing)."""
    name, urls = split_urls(rest)
    if base_url is not None:
        if urls:
            raise ConfigError(
                f"the server URL is given twice ('@' in {rest!r} and base_url); give one"
            )
        urls = url_list(base_url)
    if not name:
        raise ConfigError(f"no model name in '{provider}:{rest}'; accepted: {ACCEPTED_FORMS}")
    return name, urls


def first_env(*names: str) -> str | None:
    """The value of the first of these environment variables that is set and not empty."""
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def public_url(url: str) -> str:
    """``url`` without any user:password part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def endpoint_url(url: str) -> str:
    """``url`` as recorded: no credentials, query or fragment, no trailing slash."""
    parts = urlsplit(public_url(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
