"""The JSONL lines of the OpenAI Batch API: requests written, replies and errors read back.

A request line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``
where ``body`` is exactly what the direct path sends. An output or error line carries the
same ``custom_id`` with ``response`` (``status_code`` and the chat completion ``body``) and/or
``error`` (``code``, ``message``). Replies are read with the direct path's reader, so a batched
reply becomes the same :class:`ModelResponse` a direct call would.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from cigeval.messages import ModelResponse

logger = logging.getLogger("cigeval.backends.batch")

#: The endpoint every batched request targets.
CHAT_COMPLETIONS_URL = "/v1/chat/completions"
#: HTTP statuses of a batched request worth submitting again.
RETRYABLE_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class LineFailure:
    """A batched request that got no usable reply: the provider's message, and whether
    submitting it again may help (rate limits, server errors, expiry)."""

    message: str
    retryable: bool


#: What a batch output or error line says about one request.
LineResult = ModelResponse | LineFailure


def request_line(custom_id: str, body: dict[str, Any]) -> bytes:
    """One line of a batch input file (ASCII JSON, newline-terminated)."""
    line = {"custom_id": custom_id, "method": "POST", "url": CHAT_COMPLETIONS_URL, "body": body}
    return json.dumps(line, separators=(",", ":")).encode("ascii") + b"\n"


def read_result_lines(data: bytes, model: str, endpoint: str) -> dict[str, LineResult]:
    """custom_id -> reply or failure, from the bytes of an output or error file.

    ``model`` is the name asked for (used when a reply names none); ``endpoint`` is recorded
    with each reply as the direct path records the server that answered. A line that is not
    JSON or names no custom_id is logged and skipped: its request then counts as unanswered.
    """
    results: dict[str, LineResult] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
            custom_id = entry["custom_id"]
        except (ValueError, KeyError, TypeError):
            logger.warning("batch result line %d is unreadable; its request is retried", number)
            continue
        if not isinstance(custom_id, str):
            continue
        results[custom_id] = _read_entry(entry, model, endpoint)
    return results


def _read_entry(entry: dict[str, Any], model: str, endpoint: str) -> LineResult:
    # Imported here: the openai client loads only when a batch is read.
    from openai.types.chat import ChatCompletion

    from cigeval.backends.openai_backend import read_completion

    response = entry.get("response") if isinstance(entry.get("response"), dict) else None
    error = entry.get("error") if isinstance(entry.get("error"), dict) else None
    status = response.get("status_code") if response else None
    body = response.get("body") if response else None
    if status == 200 and isinstance(body, dict):
        try:
            completion = ChatCompletion.model_validate(body)
            text, served, usage, finish_reason = read_completion(completion, model)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            return LineFailure(f"unreadable reply: {str(exc)[:300]}", retryable=True)
        return ModelResponse(
            text, served, usage, 0.0, finish_reason=finish_reason, endpoint=endpoint
        )
    detail = _error_detail(body) or _error_detail(error) or "no reply and no error message"
    if isinstance(status, int):
        retryable = status in RETRYABLE_STATUS or status >= 500
        return LineFailure(f"HTTP {status}: {detail}", retryable)
    # No HTTP status: the request never ran (expired, cancelled, a provider-side problem).
    return LineFailure(detail, retryable=True)


def _error_detail(value: Any) -> str:
    """The message of an error object (``{"error": {...}}`` or ``{"code", "message"}``)."""
    if not isinstance(value, dict):
        return ""
    inner = value.get("error", value)
    if not isinstance(inner, dict):
        return str(inner)[:300]
    message = str(inner.get("message") or "")
    code = inner.get("code")
    text = f"{code}: {message}" if code and message else message or str(code or "")
    return text[:300]
