"""JudgeSession: calls the judge model, records every call, and re-asks when a reply is unusable.

Three kinds of reply are never used:

- an *unfinished* one (its finish reason is ``length`` or ``content_filter``,
  :data:`cigeval.messages.UNFINISHED_REASONS`): the same request is sent again with twice the
  token budget, up to the cap (``EvalConfig.max_tokens_cap``); a reply still unfinished at the
  cap is an error saying it was cut off at that many tokens;
- an *over-long* one (more than ``EvalConfig.max_reply_chars`` characters): it is cut to that
  length (the trace never holds more) and re-asked like an unparseable one, the re-ask
  showing only its first :data:`OVERLONG_SHOWN` characters;
- an *unparseable* one (the caller's parser raises): the model is shown its reply and the
  problem and asked again, ``max_parse_retries`` times.

Any backend gets this by reporting finish reasons in the one vocabulary
(:func:`cigeval.messages.normalize_finish_reason`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from cigeval._caller import in_callers_words
from cigeval._unicode import safe_text
from cigeval.backends.attempts import counting_http_attempts
from cigeval.backends.base import Backend
from cigeval.backends.observers import observed_call
from cigeval.backends.routing import CallLabel, routed_complete
from cigeval.errors import ParseError, TransportError
from cigeval.messages import (
    DEFAULT_MAX_REPLY_CHARS,
    TOKEN_CAP_FACTOR,
    UNFINISHED_REASONS,
    GenerationSettings,
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    Usage,
)
from cigeval.prompts import render, templates_sha256
from cigeval.redact import redact_known
from cigeval.trace import ErrorEvent, ModelCallEvent, Trace

T = TypeVar("T")

#: Replies longer than this many characters are parsed in a worker thread, so a long hostile
#: reply never holds up the event loop (and the other samples' calls).
PARSE_IN_THREAD_CHARS = 20_000
#: How much of an unusable reply an error message quotes.
QUOTED_CHARS = 200
#: How much of a parser's message about a reply is kept (a parser may quote the whole reply).
PROBLEM_CHARS = 500
#: How much of an over-long reply the re-ask shows the model as its previous turn.
OVERLONG_SHOWN = 1_000


def quote_reply(reply: str, limit: int = QUOTED_CHARS) -> str:
    """The first ``limit`` characters of a reply as a JSON string (``…`` marks a longer one)."""
    shown = json.dumps(reply[:limit], ensure_ascii=False)
    return shown + ("…" if len(reply) > limit else "")


@dataclasses.dataclass
class _Reply:
    """One answer as the session keeps it: the response (text bounded) and how it arrived."""

    request: ModelRequest
    response: ModelResponse
    #: The length of the text the backend returned, when it was cut to ``max_reply_chars``.
    overlong: int | None = None

    @property
    def text(self) -> str:
        return self.response.text

    @property
    def unfinished(self) -> bool:
        return self.response.finish_reason in UNFINISHED_REASONS


def recorded_reply(text: str, max_reply_chars: int) -> str:
    """A reply's text as a session uses and records it: cut to ``max_reply_chars``, made
    valid UTF-8, every secret the process knows redacted (a replay checks stored records
    against the cached answers this way)."""
    return safe_text(redact_known(text)[:max_reply_chars])


class JudgeSession:
    """One sample's conversation partner: a backend plus the sample's trace and usage.

    :meth:`ask` sends messages, parses the reply with a caller-supplied function and, when a
    reply is unusable, asks again (see the module docstring) — always the same model, never
    another one. A reply that could not be used is removed from the backend's answer cache
    (when it has one), so a later run asks again instead of replaying it.

    ``max_tokens_cap``: the largest token budget a re-ask after a cut reply may use (default:
    four times ``settings.max_tokens``; equal to it: never re-ask with a larger budget).
    ``sample_id``: the sample asking; its requests sampled at the provider's default or a
    positive temperature are its own (:attr:`ModelRequest.scope`), and a tool's are always.
    ``max_reply_chars``: the longest reply used and recorded.

    Counts, for the sample's usage: :attr:`calls` (replies received), :attr:`http_attempts`
    (HTTP requests the backend sent, retries and failures included;
    :mod:`cigeval.backends.attempts`), :attr:`cut_off_replies` (replies that arrived
    unfinished: the token limit, a content filter) and :attr:`overlong_replies` (finished
    replies longer than ``max_reply_chars``).
    """

    def __init__(
        self,
        backend: Backend,
        settings: GenerationSettings,
        trace: Trace,
        max_parse_retries: int = 2,
        prompt_dir: str | None = None,
        prompts_sha256: str | None = None,
        *,
        max_tokens_cap: int | None = None,
        max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS,
        sample_id: str | None = None,
    ) -> None:
        if max_reply_chars < 1:
            raise ValueError(f"max_reply_chars must be at least 1, got {max_reply_chars}")
        self.prompt_dir = prompt_dir
        self.backend = backend
        self.settings = settings
        self.trace = trace
        self.max_parse_retries = max_parse_retries
        #: None: no budget is sent (the provider's default), so a cut reply is final.
        self.max_tokens_cap: int | None = None
        if settings.max_tokens is not None:
            self.max_tokens_cap = max(
                settings.max_tokens,
                max_tokens_cap
                if max_tokens_cap is not None
                else TOKEN_CAP_FACTOR * settings.max_tokens,
            )
        #: Identical requests sent so far in this sample, by content (see ModelRequest.ordinal).
        self._asked: dict[str, int] = {}
        self.max_reply_chars = max_reply_chars
        #: The sample asking: a request sampled at the provider's default or a positive
        #: temperature is its own (:attr:`ModelRequest.scope`), never answered with another
        #: sample's reply to the same request (the official code asks each sample anew).
        self.sample_id = sample_id
        #: The templates the prompts come from (part of each request's cache key).
        self.prompts_sha256 = prompts_sha256 or templates_sha256(prompt_dir)
        self.usage = Usage()
        self.calls = 0
        self.http_attempts = 0
        self.cut_off_replies = 0
        self.overlong_replies = 0
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
        *,
        scope: str | None = None,
        retries: int | None = None,
    ) -> str:
        """Send ``messages`` and return the reply text (every call recorded in the trace).

        Any text is accepted, but never an unfinished or over-long reply: those are asked
        again as :meth:`ask` does, and raise :class:`ParseError` when no usable one comes.
        ``scope``: the sample the request belongs to (:attr:`ModelRequest.scope`);
        ``retries``: re-asks after an over-long reply (default ``max_parse_retries``).
        """
        return await self.ask(
            purpose,
            messages,
            _any_text,
            question_id,
            round,
            attempt,
            scope=scope,
            retries=retries,
        )

    async def ask(
        self,
        purpose: str,
        messages: Sequence[Message],
        parse: Callable[[str], T],
        question_id: str | None = None,
        round: int = 1,
        first_attempt: int = 1,
        *,
        scope: str | None = None,
        retries: int | None = None,
    ) -> T:
        """Send, parse, re-ask while the reply is unusable; raise ParseError when the re-asks
        (or the token budget) run out.

        The ParseError raised at the end carries the last reply (``reply``), so a caller can
        still salvage what it holds, and its message says how many replies came and quotes
        the first one.
        """
        conversation = list(messages)
        settings = self.settings
        ordinal = self._ordinal(conversation, settings)
        replies: list[str] = []
        reasks = 0
        attempt = first_attempt - 1
        while True:
            attempt += 1
            answer = await self._send(
                purpose, conversation, settings, question_id, attempt, round, ordinal, scope
            )
            replies.append(answer.text)
            if answer.unfinished:
                self._forget(answer.request)
                budget, cap = settings.max_tokens, self.max_tokens_cap
                larger = min(2 * budget, cap) if budget is not None and cap is not None else 0
                if budget is None or larger <= budget:
                    problem = _cut_off_for_good(answer.response, settings.max_tokens)
                    self._note(purpose, problem, question_id, answer.text)
                    raise ParseError(_none_usable(purpose, replies, problem), reply=answer.text)
                problem = _cut_off(answer.response, settings.max_tokens)
                self._note(purpose, f"{problem}; asking again with {larger} tokens", question_id)
                settings = dataclasses.replace(settings, max_tokens=larger)
                continue
            try:
                if answer.overlong is not None:
                    raise ParseError(
                        f"the reply is {answer.overlong:,} characters long, more than "
                        f"--max-reply-chars allows ({self.max_reply_chars:,}); answer briefly"
                    )
                return await _parse(parse, answer.text)
            except ParseError as exc:
                self._forget(answer.request)  # an unusable reply is never an answer to replay
                problem = _clip(str(exc), PROBLEM_CHARS)
                self._note(purpose, problem, question_id, answer.text)
                if reasks >= (self.max_parse_retries if retries is None else retries):
                    last = exc.reply if exc.reply is not None else answer.text
                    raise ParseError(_none_usable(purpose, replies, problem), reply=last) from None
                reasks += 1
                reask = render("reask.j2", prompt_dir=self.prompt_dir, error=problem)
                shown = answer.text
                if answer.overlong is not None:  # its start says enough, and costs little
                    shown = _clip(shown, OVERLONG_SHOWN)
                conversation = [
                    *conversation,
                    Message.text("assistant", shown),
                    Message.text("user", reask),
                ]

    async def _send(
        self,
        purpose: str,
        messages: Sequence[Message],
        settings: GenerationSettings,
        question_id: str | None,
        attempt: int,
        round: int,
        ordinal: int = 0,
        scope: str | None = None,
    ) -> _Reply:
        if scope is None and (settings.temperature is None or settings.temperature > 0):
            scope = self.sample_id
        request = ModelRequest(tuple(messages), settings, self.prompts_sha256, ordinal, scope)
        # told to the call's observers: the record's HTTP attempts, the run's progress bar
        with counting_http_attempts() as counter, observed_call() as received:
            try:
                label = CallLabel(purpose, question_id, attempt, round)
                response = await routed_complete(self.backend, request, label)
            except TransportError as exc:
                self.transport_failure = exc.reason  # for the run's circuit breaker
                raise
            finally:
                self.http_attempts += counter.count
            received.append(response)
        for note in counter.notes:
            self._note(purpose, note, question_id)
        overlong = len(response.text) if len(response.text) > self.max_reply_chars else None
        text = recorded_reply(response.text, self.max_reply_chars)
        if text != response.text:
            response = dataclasses.replace(response, text=text)
        answer = _Reply(request, response, overlong)
        self.calls += 1
        if answer.unfinished:  # handled as cut off, whatever its length
            self.cut_off_replies += 1
        elif overlong is not None:
            self.overlong_replies += 1
        self.usage = self.usage + response.usage
        self.trace.add(
            ModelCallEvent.build(purpose, messages, response, attempt, question_id, round)
        )
        return answer

    def _ordinal(self, messages: list[Message], settings: GenerationSettings) -> int:
        """How many times this sample already asked exactly this (its ``ModelRequest.ordinal``)."""
        content = json.dumps(
            [
                settings.as_dict(),
                *(
                    [
                        m.role,
                        *(p.text if isinstance(p, TextPart) else p.image.sha256 for p in m.parts),
                    ]
                    for m in messages
                ),
            ]
        )
        ordinal = self._asked.get(content, 0)
        self._asked[content] = ordinal + 1
        return ordinal

    def _forget(self, request: ModelRequest) -> None:
        forget = getattr(self.backend, "forget", None)
        if forget is not None:
            forget(request)

    def _note(
        self, purpose: str, problem: str, question_id: str | None, reply: str | None = None
    ) -> None:
        """An error event in the trace: the problem, and the start of the reply it is about."""
        message = problem if reply is None else f"{problem}; the reply: {quote_reply(reply)}"
        self.trace.add(ErrorEvent(stage=purpose, message=message, question_id=question_id))


def _any_text(text: str) -> str:
    return text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _cut_off(response: ModelResponse, max_tokens: int | None) -> str:
    """What an unfinished reply is, in words."""
    budget = "the provider's default" if max_tokens is None else max_tokens
    if response.finish_reason == "content_filter":
        return (
            "the reply was cut off by the provider's content filter "
            f"(finish_reason=content_filter, max_tokens={budget})"
        )
    if max_tokens is None:
        return "the reply was cut off at the provider's default token limit (finish_reason=length)"
    return f"the reply was cut off at {max_tokens} tokens (finish_reason=length)"


def _cut_off_for_good(response: ModelResponse, max_tokens: int | None) -> str:
    """Why an unfinished reply ends the asking: the budget may not grow any more."""
    cap = in_callers_words("--max-tokens-cap", "max_tokens_cap")
    budget = in_callers_words("--max-tokens", "max_tokens")
    if response.finish_reason == "content_filter":
        return f"{_cut_off(response, max_tokens)}; the budget may not grow ({cap})"
    if max_tokens is None:
        return f"{_cut_off(response, max_tokens)}; give {budget} to let a re-ask grow it"
    return (
        f"{_cut_off(response, max_tokens)}, the most {cap} allows; raise {cap} (or {budget}) "
        "or ask for a shorter reply"
    )


def _none_usable(purpose: str, replies: list[str], problem: str) -> str:
    """The final error: how many replies came, none usable, the last problem, the first one."""
    times = "once" if len(replies) == 1 else f"{len(replies)} times"
    return (
        f"{purpose}: the judge answered {times}, none usable ({problem}); "
        f"first reply: {quote_reply(replies[0])}"
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
