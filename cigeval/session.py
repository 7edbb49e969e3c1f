"""JudgeSession: calls the judge model, records every call, and re-asks on unparseable replies."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeVar

from cigeval._unicode import safe_text
from cigeval.backends.base import Backend
from cigeval.errors import ParseError, TransportError
from cigeval.messages import GenerationSettings, Message, ModelRequest, ModelResponse, Usage
from cigeval.prompts import render, templates_sha256
from cigeval.trace import ErrorEvent, ModelCallEvent, Trace

T = TypeVar("T")

#: Replies longer than this many characters are parsed in a worker thread, so a long hostile
#: reply never holds up the event loop (and the other samples' calls).
PARSE_IN_THREAD_CHARS = 20_000


class JudgeSession:
    """One sample's conversation partner: a backend plus the sample's trace and usage.

    :meth:`ask` sends messages, parses the reply with a caller-supplied function and, when the
    parser raises :class:`ParseError`, shows the model its reply and the error and asks again
    (at most ``max_parse_retries`` times) — always the same model, never another one. A reply
    that could not be parsed is removed from the backend's answer cache (when it has one), so
    a later run asks again instead of replaying it. A reply cut at the token limit is named as
    such in the error.
    """

    def __init__(
        self,
        backend: Backend,
        settings: GenerationSettings,
        trace: Trace,
        max_parse_retries: int = 2,
        prompt_dir: str | None = None,
        prompts_sha256: str | None = None,
    ) -> None:
        self.prompt_dir = prompt_dir
        self.backend = backend
        self.settings = settings
        self.trace = trace
        self.max_parse_retries = max_parse_retries
        #: The templates the prompts come from (part of each request's cache key).
        self.prompts_sha256 = prompts_sha256 or templates_sha256(prompt_dir)
        self.usage = Usage()
        self.calls = 0
        #: Why the last call that failed to reach the server failed
        #: (:attr:`~cigeval.errors.TransportError.reason`), or None.
        self.transport_failure: str | None = None

    async def call(
        self,
        purpose: str,
        messages: Sequence[Message],
        question_id: str | None = None,
        attempt: int = 1,
        round: int = 1,
    ) -> str:
        """Send ``messages`` once and return the reply text (recorded in the trace)."""
        _, response = await self._send(purpose, messages, question_id, attempt, round)
        return response.text

    async def _send(
        self,
        purpose: str,
        messages: Sequence[Message],
        question_id: str | None,
        attempt: int,
        round: int,
    ) -> tuple[ModelRequest, ModelResponse]:
        request = ModelRequest(tuple(messages), self.settings, self.prompts_sha256)
        try:
            response = await self.backend.complete(request)
        except TransportError as exc:
            self.transport_failure = exc.reason
            raise
        text = safe_text(response.text)
        if text is not response.text:
            response = ModelResponse(
                text,
                response.model,
                response.usage,
                response.latency_s,
                response.cached,
                response.finish_reason,
                response.endpoint,
            )
        self.calls += 1
        self.usage = self.usage + response.usage
        self.trace.add(
            ModelCallEvent.build(purpose, messages, response, attempt, question_id, round)
        )
        return request, response

    async def ask(
        self,
        purpose: str,
        messages: Sequence[Message],
        parse: Callable[[str], T],
        question_id: str | None = None,
        round: int = 1,
    ) -> T:
        """Send, parse, re-ask on :class:`ParseError`; raise ParseError when attempts run out.

        The ParseError raised at the end carries the last reply (``reply``), so a caller can
        still salvage what it holds.
        """
        conversation = list(messages)
        last_error: ParseError | None = None
        for attempt in range(1, self.max_parse_retries + 2):
            request, response = await self._send(purpose, conversation, question_id, attempt, round)
            reply = response.text
            try:
                return await _parse(parse, reply)
            except ParseError as exc:
                forget = getattr(self.backend, "forget", None)
                if forget is not None:
                    forget(request)  # an unusable reply is never an answer to replay
                message = str(exc)
                if response.finish_reason == "length":
                    message = (
                        f"the reply was cut off at the token limit (max_tokens="
                        f"{self.settings.max_tokens}, finish_reason=length; raise --max-tokens "
                        f"or ask for a shorter reply): {message}"
                    )
                last_error = ParseError(message, exc.reply if exc.reply is not None else reply)
                self.trace.add(ErrorEvent(stage=purpose, message=message, question_id=question_id))
                conversation = [
                    *conversation,
                    Message.text("assistant", reply),
                    Message.text(
                        "user", render("reask.j2", prompt_dir=self.prompt_dir, error=message)
                    ),
                ]
        assert last_error is not None
        raise ParseError(
            f"{purpose}: no usable reply after {self.max_parse_retries + 1} attempt(s): "
            f"{last_error}",
            reply=last_error.reply,
        )


#: What a parser may raise on a reply it cannot read besides ParseError (a bug in a parser
#: would show up the same way, but a malformed reply must never end a sample unasked).
_READ_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)


async def _parse(parse: Callable[[str], T], reply: str) -> T:
    """``parse(reply)``, in a worker thread for long replies; any failure is a ParseError."""
    try:
        if len(reply) > PARSE_IN_THREAD_CHARS:
            return await asyncio.to_thread(parse, reply)
        return parse(reply)
    except ParseError:
        raise
    except _READ_ERRORS as exc:
        message = f"the reply could not be read ({type(exc).__name__}: {exc})"
        raise ParseError(message, reply) from exc
