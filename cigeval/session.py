"""JudgeSession: calls the judge model, records every call, and re-asks on unparseable replies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from cigeval.backends.base import Backend
from cigeval.errors import ParseError
from cigeval.messages import GenerationSettings, Message, ModelRequest, Usage
from cigeval.prompts import render
from cigeval.trace import ErrorEvent, ModelCallEvent, Trace

T = TypeVar("T")


class JudgeSession:
    """One sample's conversation partner: a backend plus the sample's trace and usage.

    :meth:`ask` sends messages, parses the reply with a caller-supplied function and, when the
    parser raises :class:`ParseError`, shows the model its reply and the error and asks again
    (at most ``max_parse_retries`` times) — always the same model, never another one.
    """

    def __init__(
        self,
        backend: Backend,
        settings: GenerationSettings,
        trace: Trace,
        max_parse_retries: int = 2,
        prompt_dir: str | None = None,
    ) -> None:
        self.prompt_dir = prompt_dir
        self.backend = backend
        self.settings = settings
        self.trace = trace
        self.max_parse_retries = max_parse_retries
        self.usage = Usage()
        self.calls = 0

    async def call(
        self,
        purpose: str,
        messages: Sequence[Message],
        question_id: str | None = None,
        attempt: int = 1,
        round: int = 1,
    ) -> str:
        """Send ``messages`` once and return the reply text (recorded in the trace)."""
        response = await self.backend.complete(ModelRequest(tuple(messages), self.settings))
        self.calls += 1
        self.usage = self.usage + response.usage
        self.trace.add(
            ModelCallEvent.build(purpose, messages, response, attempt, question_id, round)
        )
        return response.text

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
            reply = await self.call(purpose, conversation, question_id, attempt, round)
            try:
                return parse(reply)
            except ParseError as exc:
                last_error = exc if exc.reply is not None else ParseError(str(exc), reply)
                self.trace.add(ErrorEvent(stage=purpose, message=str(exc), question_id=question_id))
                conversation = [
                    *conversation,
                    Message.text("assistant", reply),
                    Message.text(
                        "user", render("reask.j2", prompt_dir=self.prompt_dir, error=str(exc))
                    ),
                ]
        assert last_error is not None
        raise ParseError(
            f"{purpose}: no usable reply after {self.max_parse_retries + 1} attempt(s): "
            f"{last_error}",
            reply=last_error.reply,
        )
