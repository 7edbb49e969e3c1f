"""Any langchain-core chat model (``BaseChatModel``) as a cigeval backend.

langchain_core is imported only when an adapter is built, never when cigeval is imported.
"""

from __future__ import annotations

import time
from typing import Any

from cigeval.errors import BackendError
from cigeval.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ModelResponse,
    Usage,
    normalize_finish_reason,
)


class LangChainBackend:
    """Adapts a langchain ``BaseChatModel`` (ChatOpenAI, ChatAnthropic, ChatOllama, ...).

    Messages become SystemMessage / HumanMessage / AIMessage with ``image_url`` content
    blocks holding base64 data URIs. The chat model's own configuration governs generation;
    with ``pass_settings=True`` the request's temperature, max_tokens, seed and top_p are also
    passed as call arguments (only for models that accept them: ChatOpenAI does, some
    providers reject ``seed``). The identity is ``langchain:<model name>``, taken from the
    model's ``model_name`` or ``model`` attribute, else its class name.
    """

    def __init__(self, chat_model: Any, *, pass_settings: bool = False) -> None:
        if not hasattr(chat_model, "ainvoke"):
            raise TypeError(f"{type(chat_model).__name__} is not a langchain chat model")
        self.chat_model = chat_model
        self.pass_settings = pass_settings
        name = getattr(chat_model, "model_name", None) or getattr(chat_model, "model", None)
        self.has_model_name = isinstance(name, str) and bool(name)
        self.model_name = name if isinstance(name, str) and name else type(chat_model).__name__

    @property
    def identity(self) -> str:
        """``langchain:<model name>``."""
        return f"langchain:{self.model_name}"

    def __repr__(self) -> str:
        return f"LangChainBackend({type(self.chat_model).__name__}, model={self.model_name!r})"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Ask the chat model; any error it raises becomes a BackendError."""
        messages = [to_langchain_message(m) for m in request.messages]
        kwargs: dict[str, Any] = {}
        if self.pass_settings:
            settings = request.settings
            if settings.temperature is not None:
                kwargs["temperature"] = settings.temperature
            if settings.max_tokens is not None:
                kwargs["max_tokens"] = settings.max_tokens
            if settings.seed is not None:
                kwargs["seed"] = settings.seed
            if settings.top_p is not None:
                kwargs["top_p"] = settings.top_p
        started = time.perf_counter()
        try:
            reply = await self.chat_model.ainvoke(messages, **kwargs)
        except Exception as exc:
            raise BackendError(f"{self.identity} failed: {type(exc).__name__}: {exc}") from exc
        usage = Usage()
        metadata = getattr(reply, "usage_metadata", None)
        if metadata:
            usage = Usage(
                int(metadata.get("input_tokens", 0)), int(metadata.get("output_tokens", 0))
            )
        metadata = getattr(reply, "response_metadata", None)
        metadata = metadata if isinstance(metadata, dict) else {}
        reported = metadata.get("model_name") or metadata.get("model")
        return ModelResponse(
            _content_text(getattr(reply, "content", reply)),
            reported if isinstance(reported, str) and reported else self.model_name,
            usage,
            time.perf_counter() - started,
            finish_reason=_finish_reason(metadata),
        )


def _finish_reason(metadata: dict[str, Any]) -> str | None:
    """The provider's stop reason (OpenAI's ``finish_reason``, Anthropic's ``stop_reason``,
    Gemini's ``FinishReason`` enum, ...) in cigeval's vocabulary
    (:func:`~cigeval.messages.normalize_finish_reason`); None when the reply names none."""
    reason = metadata.get("finish_reason") or metadata.get("stop_reason")
    return normalize_finish_reason(reason) if reason else None


def to_langchain_message(message: Message) -> Any:
    """One cigeval message as a langchain message object."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    if message.role == "assistant":
        return AIMessage(content=message.text_content())
    if message.role == "system" and not message.images():
        return SystemMessage(content=message.text_content())
    blocks: list[str | dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            blocks.append({"type": "image_url", "image_url": {"url": part.image.data_uri()}})
        else:
            blocks.append({"type": "text", "text": part.text})
    if message.role == "system":
        return SystemMessage(content=blocks)
    return HumanMessage(content=blocks)


def _content_text(content: Any) -> str:
    """The text of a reply's content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                pieces.append(str(block.get("text", "")))
        return "".join(pieces)
    return str(content)
