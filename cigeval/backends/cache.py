"""A disk cache of model answers (and of tool outputs), safe for concurrent writers.

Layout: ``<directory>/<namespace>/<k[:2]>/<k[2:4]>/<k>.json``. Every entry is written to a
temporary file in its final folder and moved into place with :func:`os.replace`, which is
atomic on POSIX and Windows: a reader sees either no entry or a whole one, whether writers
are threads, processes or killed half-way. An entry that does not parse is treated as a miss.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from cigeval.backends.base import Backend
from cigeval.messages import ModelRequest, ModelResponse, TextPart, Usage

#: Bumped when the key recipe or the entry format changes, so old entries are not misread.
CACHE_FORMAT = 1


def cache_key(identity: str, request: ModelRequest) -> str:
    """The sha256 hex key of a request to a model.

    It covers what can change the answer: the backend identity, the generation settings and
    the messages, images included by their sha256 and label. Timeouts, retries, URLs and API
    keys are left out on purpose: they never change what the model says.
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
        "settings": request.settings.as_dict(),
        "messages": messages,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Model answers and JSON values stored on disk under ``directory``.

    :meth:`lookup` / :meth:`save` hold model answers by :func:`cache_key`. :meth:`get` /
    :meth:`set` hold any JSON-serialisable value under any string key in a separate namespace,
    so the same instance serves as a :class:`cigeval.tools.base.ToolCache`.
    Nothing secret is ever written: entries hold reply text, model name, token counts and keys.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    def path_for(self, namespace: str, key: str) -> Path:
        """Where the entry ``key`` of ``namespace`` lives (existing or not)."""
        name = key if _is_hex_digest(key) else hashlib.sha256(key.encode("utf-8")).hexdigest()
        return self.directory / namespace / name[:2] / name[2:4] / f"{name}.json"

    def lookup(self, key: str) -> ModelResponse | None:
        """The cached answer for ``key`` (marked ``cached=True``), or None."""
        entry = self._read("responses", key)
        if entry is None:
            return None
        try:
            usage = entry.get("usage") or {}
            return ModelResponse(
                text=str(entry["text"]),
                model=str(entry["model"]),
                usage=Usage(
                    int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
                ),
                latency_s=0.0,
                cached=True,
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def save(self, key: str, response: ModelResponse) -> None:
        """Store an answer under ``key``."""
        value = {
            "text": response.text,
            "model": response.model,
            "usage": {
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
            },
        }
        self._write("responses", key, value)

    def get(self, key: str) -> Any | None:
        """The JSON value stored under ``key`` by :meth:`set`, or None."""
        entry = self._read("values", key)
        return None if entry is None else entry.get("value")

    def set(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable value under ``key`` (TypeError if it is not JSON)."""
        self._write("values", key, {"value": value})

    def _read(self, namespace: str, key: str) -> dict[str, Any] | None:
        try:
            raw = self.path_for(namespace, key).read_bytes()
            entry = json.loads(raw)
        except (OSError, ValueError):
            return None
        valid = (
            isinstance(entry, dict)
            and entry.get("format") == CACHE_FORMAT
            and entry.get("key") == key
        )
        return entry if valid else None

    def _write(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        entry = {"format": CACHE_FORMAT, "key": key, "written": time.time(), **value}
        # Serialise before touching the disk so a bad value leaves nothing behind.
        data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        path = self.path_for(namespace, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def _is_hex_digest(key: str) -> bool:
    return len(key) == 64 and all(c in "0123456789abcdef" for c in key)


class CachedBackend:
    """A :class:`Backend` that answers from a :class:`ResponseCache` when it can.

    A hit returns the stored answer with ``cached=True`` and makes no call; a miss calls
    ``inner`` and stores the answer. Errors are never cached. Sampling settings are part of
    the key, so ask with a different seed to get a fresh sample at ``temperature > 0``.
    """

    def __init__(self, inner: Backend, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        # Identical requests in flight at the same time share one call (per event loop).
        self._in_flight: dict[tuple[int, str], asyncio.Future[ModelResponse]] = {}

    @property
    def identity(self) -> str:
        """The wrapped backend's identity (a cached answer is the same model's answer)."""
        return self.inner.identity

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer from the cache, or ask the wrapped backend and remember its answer."""
        key = cache_key(self.inner.identity, request)
        started = time.perf_counter()
        hit = self.cache.lookup(key)
        if hit is not None:
            return ModelResponse(
                hit.text, hit.model, hit.usage, time.perf_counter() - started, cached=True
            )
        slot = (id(asyncio.get_running_loop()), key)
        pending = self._in_flight.get(slot)
        if pending is not None:
            shared = await asyncio.shield(pending)
            return ModelResponse(
                shared.text, shared.model, shared.usage, time.perf_counter() - started, cached=True
            )
        future: asyncio.Future[ModelResponse] = asyncio.get_running_loop().create_future()
        self._in_flight[slot] = future
        try:
            response = await self.inner.complete(request)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it, nobody else must
            raise
        finally:
            self._in_flight.pop(slot, None)
        self.cache.save(key, response)
        future.set_result(response)
        return response

    def __repr__(self) -> str:
        return f"CachedBackend({self.inner!r}, {self.cache!r})"
