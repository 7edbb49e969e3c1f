"""A disk cache of model answers (and of tool outputs), safe for concurrent writers.

Entries live in one SQLite index, ``<directory>/cache.sqlite3``
(:mod:`cigeval._cache_store`): each write is atomic, so a reader sees either no entry
or a whole one, whether writers are threads, processes or killed half-way. An entry that does
not parse, or that names another key, is treated as a miss. Caches of the earlier layout (one
JSON file per entry) are still read. A cache that cannot be read or written (a full disk, a
folder without permission) is a miss too, with one warning: the run goes on without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cigeval._cache_store import CacheStore
from cigeval._warn_once import warn_once
from cigeval.backends.base import Backend, backend_endpoint
from cigeval.backends.wrapper import WrappingBackend
from cigeval.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    Usage,
    normalize_finish_reason,
)

logger = logging.getLogger("cigeval.backends.cache")

#: Bumped when the key recipe or the entry format changes, so old entries are not misread.
#: 2: the key covers the endpoint and the prompt templates; entries keep the finish reason.
CACHE_FORMAT = 2

_REFRESH: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cigeval_cache_refresh", default=False
)
_NOTED: contextvars.ContextVar[list[tuple[str, ModelResponse]] | None] = contextvars.ContextVar(
    "cigeval_cache_noted", default=None
)


@contextlib.contextmanager
def bypass_cached_answers() -> Iterator[None]:
    """Within this block (and the tasks it starts), cached answers are not read: every request
    goes to the model, and the new answers replace the cached ones. Used to rerun samples
    that ended in error (``--retry-errors``)."""
    token = _REFRESH.set(True)
    try:
        yield
    finally:
        _REFRESH.reset(token)


@contextlib.contextmanager
def noting_answers() -> Iterator[list[tuple[str, ModelResponse]]]:
    """Within this block (and the tasks it starts), each request a :class:`CachedBackend`
    answers (from the cache or not) adds its key and answer to the list yielded: the answers
    a sample's record was built from."""
    noted: list[tuple[str, ModelResponse]] = []
    token = _NOTED.set(noted)
    try:
        yield noted
    finally:
        _NOTED.reset(token)


def cache_bypassed() -> bool:
    """True within :func:`bypass_cached_answers` (cached answers are not to be read)."""
    return _REFRESH.get()


def cache_key(identity: str, request: ModelRequest, endpoint: str | None = None) -> str:
    """The sha256 hex key of a request to a model.

    It covers what can change the answer: the backend identity, the server set answering
    (``endpoint``: two checkpoints served under one name are two models), the prompt
    templates (``request.prompts_sha256``), the generation settings and the messages, images
    included by their sha256 and label, and the sample a tool's call belongs to
    (``request.scope``). Timeouts, retries and API keys are left out on
    purpose: they never change what the model says. Replicas listed in one spec share an
    endpoint, so they share entries.
    """
    messages = [
        {
            "role": message.role,
            "parts": [
                {"text": part.text}
                if isinstance(part, TextPart)
                else {"image": part.image.sha256, "mime": part.image.mime, "label": part.label}
                for part in message.parts
            ],
        }
        for message in request.messages
    ]
    payload = {
        "format": CACHE_FORMAT,
        "identity": identity,
        "endpoint": endpoint,
        "prompts": request.prompts_sha256,
        "settings": request.settings.as_dict(),
        "messages": messages,
    }
    if request.ordinal:
        payload["ordinal"] = request.ordinal
    if request.scope is not None:
        payload["scope"] = request.scope
    # ASCII escapes: a lone surrogate in a message must not make the key unencodable.
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


class ResponseCache:
    """Model answers and JSON values stored on disk under ``directory``.

    :meth:`lookup` / :meth:`save` hold model answers by :func:`cache_key`. :meth:`get` /
    :meth:`set` hold any JSON-serialisable value under any string key in a separate namespace,
    so the same instance serves as a :class:`cigeval.tools.base.ToolCache`.
    Nothing secret is ever written: entries hold reply text, model name, token counts and keys.
    Reading or writing never raises for a disk problem: a failed read is a miss, a failed
    write is logged (once per cache) and forgotten.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()
        self.store = CacheStore(self.directory)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    def path_for(self, namespace: str, key: str) -> Path:
        """Where the one-file-per-entry layout of earlier versions kept ``key`` of
        ``namespace`` (read when the index lacks it)."""
        return self.store.legacy_path(namespace, _entry_name(key))

    def lookup(self, key: str) -> ModelResponse | None:
        """The cached answer for ``key`` (marked ``cached=True``), or None."""
        entry = self._read("responses", key)
        if entry is None:
            return None
        try:
            usage = entry.get("usage") or {}
            finish_reason = entry.get("finish_reason")
            endpoint = entry.get("endpoint")
            return ModelResponse(
                text=str(entry["text"]),
                model=str(entry["model"]),
                usage=Usage(
                    int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
                ),
                latency_s=0.0,
                cached=True,
                # Entries written before the one vocabulary may hold a provider's spelling.
                finish_reason=normalize_finish_reason(finish_reason),
                endpoint=str(endpoint) if endpoint is not None else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def save(self, key: str, response: ModelResponse) -> None:
        """Store an answer under ``key`` (a write that fails is logged, never raised)."""
        value = {
            "text": response.text,
            "model": response.model,
            "usage": {
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
            },
            "finish_reason": response.finish_reason,
            "endpoint": response.endpoint,
        }
        self._write("responses", key, value)

    def delete(self, key: str) -> None:
        """Forget the answer stored under ``key`` (nothing happens when there is none)."""
        try:
            self.store.delete("responses", _entry_name(key))
        except (OSError, sqlite3.Error) as exc:
            self._warn(f"could not delete a cache entry: {exc}")

    def get(self, key: str) -> Any | None:
        """The JSON value stored under ``key`` by :meth:`set`, or None."""
        entry = self._read("values", key)
        return None if entry is None else entry.get("value")

    def set(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable value under ``key`` (TypeError if it is not JSON; a
        write that fails on disk is logged, never raised)."""
        self._write("values", key, {"value": value})

    def get_bytes(self, key: str) -> bytes | None:
        """The bytes stored under ``key`` by :meth:`set_bytes`, or None."""
        try:
            return self.store.get("bytes", _entry_name(key))
        except (OSError, sqlite3.Error):
            return None

    def set_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (a write that fails is logged, never raised)."""
        try:
            self.store.put("bytes", _entry_name(key), data)
        except (OSError, sqlite3.Error) as exc:
            self._warn(f"could not write to the cache: {exc}")

    def _read(self, namespace: str, key: str) -> dict[str, Any] | None:
        try:
            raw = self.store.get(namespace, _entry_name(key))
            if raw is None:
                return None
            entry = json.loads(raw)
        except (OSError, sqlite3.Error, ValueError, RecursionError):
            return None
        valid = (
            isinstance(entry, dict)
            and entry.get("format") == CACHE_FORMAT
            and entry.get("key") == key
        )
        return entry if valid else None

    def _write(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        entry = {"format": CACHE_FORMAT, "key": key, "written": time.time(), **value}
        # Serialise before touching the disk so a bad value leaves nothing behind. ASCII
        # escapes keep any text (a lone surrogate included) exactly as it was.
        data = json.dumps(entry).encode("ascii")
        try:
            self.store.put(namespace, _entry_name(key), data)
        except (OSError, sqlite3.Error) as exc:
            self._warn(f"could not write to the cache: {exc}")

    def _warn(self, message: str) -> None:
        # Once per folder and process: a run has a cache for answers and one for tools.
        warn_once(
            logger,
            f"cache-unwritable:{self.directory}",
            f"{message} ({self.directory}); going on without caching",
        )


def _entry_name(key: str) -> str:
    """The name an entry is stored under: the key itself when it is a sha256 hex digest (as
    answer keys are), else the sha256 of the key."""
    if len(key) == 64 and all(c in "0123456789abcdef" for c in key):
        return key
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class CachedBackend(WrappingBackend[Backend]):
    """A :class:`Backend` that answers from a :class:`ResponseCache` when it can.

    A hit returns the stored answer with ``cached=True`` and makes no call; a miss calls
    ``inner`` and stores the answer. Errors are never cached, and :meth:`forget` removes an
    answer found unusable. Sampling settings are part of the key, so ask with a different
    seed to get a fresh sample at ``temperature > 0``. Within :func:`bypass_cached_answers`
    every request goes to ``inner``.
    """

    def __init__(self, inner: Backend, cache: ResponseCache) -> None:
        super().__init__(inner)
        self.cache = cache
        # Identical requests in flight at the same time share one call (per event loop).
        # A future's result is the answer, or None when the call was cancelled (waiters
        # then ask themselves); its exception is the call's error.
        self._in_flight: dict[tuple[int, str], asyncio.Future[ModelResponse | None]] = {}

    def key(self, request: ModelRequest) -> str:
        """The cache key of ``request`` to this backend."""
        return cache_key(self.inner.identity, request, backend_endpoint(self.inner))

    def forget(self, request: ModelRequest) -> None:
        """Remove the cached answer to ``request`` (it proved unusable)."""
        self.cache.delete(self.key(request))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer from the cache, or ask the wrapped backend and remember its answer."""
        key = self.key(request)
        started = time.perf_counter()
        noted = _NOTED.get()
        if not _REFRESH.get():
            hit = self.cache.lookup(key)
            if hit is not None:
                if noted is not None:
                    noted.append((key, hit))
                return dataclasses.replace(hit, latency_s=time.perf_counter() - started)
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        while (pending := self._in_flight.get(slot)) is not None:
            shared = await asyncio.shield(pending)
            if shared is not None:
                if noted is not None:
                    noted.append((key, shared))
                elapsed = time.perf_counter() - started
                return dataclasses.replace(shared, latency_s=elapsed, cached=True)
            # The call we waited for was cancelled: make our own (or join a newer one).
        future: asyncio.Future[ModelResponse | None] = loop.create_future()
        self._in_flight[slot] = future
        try:
            response = await self.inner.complete(request)
        except asyncio.CancelledError:
            future.set_result(None)
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it, nobody else must
            raise
        else:
            future.set_result(response)
        finally:
            if self._in_flight.get(slot) is future:
                del self._in_flight[slot]
        self.cache.save(key, response)
        if noted is not None:
            noted.append((key, response))
        return response

    def __repr__(self) -> str:
        return f"CachedBackend({self.inner!r}, {self.cache!r})"
