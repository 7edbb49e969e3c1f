"""JudgeSession: what a malformed, cut or hostile reply turns into."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from cigeval.backends import CachedBackend, ResponseCache, ScriptedBackend
from cigeval.backends.attempts import note_http_attempt
from cigeval.backends.observers import CallObserver, current_observers, observing
from cigeval.errors import BackendError, ParseError
from cigeval.messages import GenerationSettings, Message, ModelRequest, ModelResponse
from cigeval.parsing import parse_judgement
from cigeval.prompts import templates_sha256
from cigeval.session import PARSE_IN_THREAD_CHARS, JudgeSession
from cigeval.trace import ErrorEvent, Trace

QUESTION = [Message.text("user", "Score it.")]


class CutBackend:
    """Replies with a fixed text, reported as cut at the token limit; records each budget."""

    identity = "test:cut"

    def __init__(self, text: str, finish_reason: str = "length") -> None:
        self.text = text
        self.finish_reason = finish_reason
        self.budgets: list[int] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.budgets.append(request.settings.max_tokens)
        return ModelResponse(self.text, "served-model", finish_reason=self.finish_reason)


def session(backend: object, retries: int = 1, **options: Any) -> JudgeSession:
    settings = GenerationSettings(max_tokens=16)
    return JudgeSession(backend, settings, Trace(), retries, **options)  # type: ignore[arg-type]


def strict_int(text: str) -> int:
    if not text.strip().isdigit():
        raise ParseError(f"not a number: {text!r}")
    return int(text)


def judgement(text: str) -> float:
    return parse_judgement(text)[0]


async def test_a_cut_reply_is_asked_again_with_twice_the_budget_up_to_the_cap() -> None:
    backend = CutBackend('{"score": "1')
    judge = session(backend, max_tokens_cap=64)
    with pytest.raises(ParseError) as info:
        await judge.ask("judge", QUESTION, judgement)
    assert backend.budgets == [16, 32, 64]  # doubled, never past the cap, no parse re-ask
    message = str(info.value)
    assert message.startswith("judge: the judge answered 3 times, none usable")
    assert "the reply was cut off at 64 tokens (finish_reason=length)" in message
    assert (
        "max_tokens_cap" in message
        and "--" not in message
        and 'first reply: "{\\"score\\": \\"1"' in message
    )
    calls = judge.trace.model_calls()
    assert [c.finish_reason for c in calls] == ["length"] * 3
    assert [c.attempt for c in calls] == [1, 2, 3]
    assert all(c.messages == calls[0].messages for c in calls)  # the same request, larger budget
    notes = [e.message for e in judge.trace.events if e.type == "error"]
    assert "asking again with 32 tokens" in notes[0] and "asking again with 64 tokens" in notes[1]
    assert (judge.calls, judge.cut_off_replies) == (3, 3)


async def test_the_default_cap_is_four_times_the_budget() -> None:
    backend = CutBackend("{")
    with pytest.raises(ParseError, match="cut off at 64 tokens"):
        await session(backend).ask("judge", QUESTION, judgement)
    assert backend.budgets == [16, 32, 64]


async def test_a_cap_equal_to_the_budget_never_asks_again() -> None:
    backend = CutBackend('{"score": 7, "reasoning": "complete, yet cut"}')
    with pytest.raises(ParseError, match="answered once, none usable"):
        await session(backend, max_tokens_cap=16).ask("judge", QUESTION, judgement)
    assert backend.budgets == [16]  # even a complete JSON value is not used when cut


async def test_a_reply_stopped_by_the_content_filter_is_never_used() -> None:
    backend = CutBackend('{"score": 9}', finish_reason="content_filter")
    with pytest.raises(ParseError) as info:
        await session(backend, max_tokens_cap=32).ask("judge", QUESTION, judgement)
    assert backend.budgets == [16, 32]
    assert "content filter (finish_reason=content_filter" in str(info.value)


async def test_the_issue_case_gives_the_score_of_the_complete_reply(tmp_path: Path) -> None:
    """``{"score": "1`` cut at the token limit, then the whole reply with a larger budget."""

    def reply(request: ModelRequest) -> ModelResponse:
        if request.settings.max_tokens < 32:
            return ModelResponse('{"score": "1', "m", finish_reason="length")
        return ModelResponse('{"score": "10", "reasoning": "all there"}', "m", finish_reason="stop")

    cached = CachedBackend(ScriptedBackend(reply), ResponseCache(tmp_path))
    judge = session(cached)
    assert await judge.ask("judge", QUESTION, judgement) == 10
    first, second = cached.inner.requests  # type: ignore[attr-defined]
    # the cut reply was forgotten, the complete one is kept
    assert cached.cache.lookup(cached.key(first)) is None
    assert cached.cache.lookup(cached.key(second)) is not None
    assert (judge.calls, judge.cut_off_replies) == (2, 1)


@pytest.mark.parametrize("finish_reason", ["stop", None, "unknown"])
async def test_a_fragment_is_unusable_whatever_the_finish_reason(finish_reason: str | None) -> None:
    backend = ScriptedBackend(
        [
            ModelResponse('{"score": "1', "m", finish_reason=finish_reason),
            ModelResponse('{"score": "10", "reasoning": "whole"}', "m", finish_reason="stop"),
        ]
    )
    judge = session(backend)
    assert await judge.ask("judge", QUESTION, judgement) == 10
    (note,) = [e.message for e in judge.trace.events if e.type == "error"]
    assert "never closed" in note and "--max-tokens" not in note
    # a fragment the server did not call cut is re-asked as unparseable, not as cut off
    assert judge.cut_off_replies == 0
    assert len(backend.requests[1].messages) == len(QUESTION) + 2


async def test_no_token_hint_when_a_complete_reply_simply_holds_no_json() -> None:
    judge = session(ScriptedBackend(["I cannot judge this image."] * 2))
    with pytest.raises(ParseError) as info:
        await judge.ask("judge", QUESTION, judgement)
    message = str(info.value)
    assert "answered 2 times, none usable (no score found" in message
    assert 'first reply: "I cannot judge this image."' in message
    assert "max-tokens" not in message and "cut off" not in message


async def test_errors_quote_the_first_200_characters_of_the_reply() -> None:
    long = "x" * 150 + "y" * 150
    judge = session(ScriptedBackend([long]), retries=0)
    with pytest.raises(ParseError) as info:
        await judge.ask("judge", QUESTION, judgement)
    assert f'first reply: "{long[:200]}"…' in str(info.value)
    assert long[:201] not in str(info.value)
    (note,) = [e.message for e in judge.trace.events if e.type == "error"]
    assert note.endswith(f'the reply: "{long[:200]}"…')


async def test_a_parser_message_quoting_a_whole_reply_is_clipped() -> None:
    judge = session(ScriptedBackend(["z" * 5000]), retries=0)
    with pytest.raises(ParseError) as info:
        await judge.ask("judge", QUESTION, strict_int)  # its message holds the whole reply
    assert len(str(info.value)) < 1000


async def test_an_over_long_reply_is_cut_counted_and_asked_again() -> None:
    backend = ScriptedBackend(["7" * 50, "8"])
    judge = session(backend, max_reply_chars=20)
    assert await judge.ask("judge", QUESTION, strict_int) == 8
    first, second = judge.trace.model_calls()
    assert first.reply == "7" * 20  # the trace never holds more than the limit
    notes = [e.message for e in judge.trace.events if e.type == "error"]
    assert "the reply is 50 characters long, more than --max-reply-chars allows (20)" in notes[0]
    assert "more than --max-reply-chars" in second.messages[-1].text  # told in the re-ask
    assert second.messages[-2].text == "7" * 20


async def test_a_re_ask_shows_only_the_start_of_an_over_long_reply() -> None:
    backend = ScriptedBackend(["7" * 5000, "8"])
    judge = session(backend, max_reply_chars=3000)
    assert await judge.ask("judge", QUESTION, strict_int) == 8
    assert len(judge.trace.model_calls()[0].reply) == 3000
    assert backend.requests[1].messages[-2].text_content() == "7" * 1000 + "…"
    # over-long, counted by that name: no token limit cut it (issue 41)
    assert (judge.calls, judge.cut_off_replies, judge.overlong_replies) == (2, 0, 1)


async def test_replies_that_stay_too_long_end_in_an_error() -> None:
    judge = session(ScriptedBackend(["9" * 1000] * 2), max_reply_chars=100)
    with pytest.raises(
        ParseError, match=r"answered 2 times, none usable \(the reply is 1,000 char"
    ):
        await judge.ask("judge", QUESTION, strict_int)
    assert all(len(c.reply) == 100 for c in judge.trace.model_calls())


async def test_call_takes_any_text_but_never_a_cut_one() -> None:
    def reply(request: ModelRequest) -> ModelResponse:
        budget = request.settings.max_tokens
        return ModelResponse(
            f"a description in {budget}", "m", finish_reason="length" if budget < 64 else "stop"
        )

    backend = ScriptedBackend(reply)
    judge = session(backend)
    assert await judge.call("describe", QUESTION) == "a description in 64"
    assert [r.settings.max_tokens for r in backend.requests] == [16, 32, 64]


class FailingHTTPBackend:
    """Sends three HTTP requests for each call, then gives up (as a backend out of retries)."""

    identity = "test:failing"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        note_http_attempt(3)
        raise BackendError("server error after 3 attempts")


async def test_http_attempts_are_counted_also_when_the_call_fails() -> None:
    judge = session(FailingHTTPBackend())
    with pytest.raises(BackendError):
        await judge.call("judge", QUESTION)
    assert (judge.http_attempts, judge.calls) == (3, 0)
    note_http_attempt()  # outside a call it counts for nobody
    assert judge.http_attempts == 3


class NotingHTTPBackend:
    """Sends two HTTP requests (the first refused with 429), then answers, noting what it
    ignored in the reply."""

    identity = "test:noting"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        observers = current_observers()
        observers.attempt_sent()
        observers.attempt_ended("rate_limited", "HTTP 429")
        observers.attempt_sent()
        observers.attempt_ended(None)
        observers.note("the server reported prompt_tokens=-5; it was ignored")
        return ModelResponse("an answer", "m")


class Seen(CallObserver):
    def __init__(self) -> None:
        self.events: list[str] = []

    def call_started(self) -> None:
        self.events.append("started")

    def call_ended(self, response: ModelResponse | None) -> None:
        self.events.append(f"ended:{response.text if response else None}")

    def attempt_sent(self, attempts: int = 1) -> None:
        self.events.append(f"sent:{attempts}")

    def attempt_ended(self, transport: str | None, detail: str = "") -> None:
        self.events.append(f"attempt:{transport}")


async def test_one_observer_hook_sees_every_call_and_attempt_and_notes_reach_the_trace() -> None:
    seen = Seen()
    judge = session(NotingHTTPBackend())
    with observing(seen):
        assert await judge.call("judge", QUESTION) == "an answer"
    await judge.call("judge", QUESTION)  # after the block: not observed
    assert seen.events == [
        "started", "sent:1", "attempt:rate_limited", "sent:1", "attempt:None", "ended:an answer"
    ]  # fmt: skip
    assert judge.http_attempts == 4
    notes = [e.message for e in judge.trace.events if isinstance(e, ErrorEvent)]
    assert notes and all("prompt_tokens=-5" in n for n in notes)


async def test_any_failure_of_a_parser_is_a_parse_error_that_is_reasked() -> None:
    def brittle(text: str) -> int:
        return int(text)  # int("²") raises ValueError, not ParseError

    judge = session(ScriptedBackend(["²", "7"]))
    assert await judge.ask("judge", QUESTION, brittle) == 7
    errors = [e for e in judge.trace.events if e.type == "error"]
    assert len(errors) == 1 and "ValueError" in errors[0].message


async def test_long_replies_are_parsed_off_the_event_loop() -> None:
    threads: list[str] = []

    def where(text: str) -> int:
        threads.append(threading.current_thread().name)
        return len(text)

    long = "x" * (PARSE_IN_THREAD_CHARS + 1)
    judge = session(ScriptedBackend(["short", long]))
    await judge.ask("judge", QUESTION, where)
    await judge.ask("judge", QUESTION, where)
    main = threading.main_thread().name
    assert threads[0] == main and threads[1] != main


async def test_unusable_replies_are_not_kept_in_the_cache(tmp_path: Path) -> None:
    inner = ScriptedBackend(["junk", "8", "junk again", "9"])
    cached = CachedBackend(inner, ResponseCache(tmp_path))
    assert await session(cached).ask("judge", QUESTION, strict_int) == 8
    # The first request's unusable answer was forgotten: asking again goes to the model.
    assert await session(cached).ask("judge", QUESTION, strict_int) == 9
    assert len(inner.requests) == 4
    # The usable answer to the re-ask is kept.
    reask = inner.requests[3]
    assert cached.cache.lookup(cached.key(reask)) is not None


async def test_lone_surrogates_in_replies_are_replaced_before_anything_sees_them() -> None:
    judge = session(ScriptedBackend(["7 \ud800"]))
    assert await judge.ask("judge", QUESTION, lambda text: text) == "7 \ufffd"
    assert judge.trace.model_calls()[0].reply == "7 \ufffd"


async def test_requests_carry_the_prompt_templates_hash(tmp_path: Path) -> None:
    backend = ScriptedBackend(["1"])
    (tmp_path / "reask.j2").write_text("Try again: {{ error }}")
    judge = JudgeSession(backend, GenerationSettings(), Trace(), prompt_dir=str(tmp_path))
    await judge.call("judge", QUESTION)
    sent = backend.requests[0].prompts_sha256
    assert sent == templates_sha256(tmp_path) != templates_sha256()


async def test_identical_calls_of_one_sample_are_asked_and_cached_apart(tmp_path: Path) -> None:
    """The official code asks some questions twice in one sample (a scene graph per
    sub-question) and samples anew each time: the second asking is not the first's answer,
    and a later run replays each from its own cache entry."""
    cached = CachedBackend(ScriptedBackend(["first", "second"]), ResponseCache(tmp_path))
    unset = GenerationSettings(temperature=None, max_tokens=None, seed=None)
    question = [Message.text("user", "describe the image")]

    async def two_asks() -> list[str]:
        judge = JudgeSession(cached, unset, Trace())
        return [await judge.call("scene_graph", question) for _ in range(2)]

    assert await two_asks() == ["first", "second"]
    assert [r.ordinal for r in cached.inner.requests] == [0, 1]  # type: ignore[attr-defined]
    assert await two_asks() == ["first", "second"]  # a new sample: both from the cache
    assert len(cached.inner.requests) == 2  # type: ignore[attr-defined]
