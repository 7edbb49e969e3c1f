"""A small client of ``POST /v1/score`` (the standard library's HTTP, orjson), for the
adapters and the bench."""

from __future__ import annotations

import base64
import urllib.error
import urllib.request
from typing import Any

from cigeval.errors import CigevalError


class ServiceError(CigevalError):
    """The service answered an error for the whole request (status and detail)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status


class ScoreClient:
    """Posts batches to a running ``cigeval serve`` at ``url`` (``http://host:port``)."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout_s: float = 300.0):
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def score(self, items: list[dict[str, Any]], *, reasoning: bool = False) -> dict[str, Any]:
        """The service's answer to ``{"items": items}`` (a ServiceError for a non-200);
        ``reasoning`` asks for each sub-question's reasoning."""
        import orjson

        body = orjson.dumps({"items": items, "reasoning": True} if reasoning else {"items": items})
        request = urllib.request.Request(
            f"{self.url}/v1/score", data=body, headers=self._headers(), method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer: dict[str, Any] = orjson.loads(response.read())
                return answer
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise ServiceError(exc.code, detail) from None


def b64(data: bytes) -> str:
    """Base64 text of image bytes, as ``/v1/score`` takes them."""
    return base64.b64encode(data).decode("ascii")
