"""JudgeSession: what a malformed, cut or hostile reply turns into."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cigeval.backends import CachedBackend, ResponseCache, ScriptedBackend
from cigeval.errors import ParseError
from cigeval.messages import GenerationSettings, Message, ModelRequest, ModelResponse
from cigeval.prompts import templates_sha256
from cigeval.session import PARSE_IN_THREAD_CHARS, JudgeSession
from cigeval.trace import Trace

QUESTION = [Message.text("user", "Score it.")]


class CutBackend:
    """Replies with a fixed text, reported as cut at the token limit."""

    identity = "test:cut"

    def __init__(self, text: str) -> None:
        self.text = text

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(self.text, "served-model", finish_reason="length")


def session(backend: object, retries: int = 1) -> JudgeSession:
    return JudgeSession(backend, GenerationSettings(max_tokens=16), Trace(), retries)  # type: ignore[arg-type]


def strict_int(text: str) -> int:
    if not text.strip().isdigit():
        raise ParseError(f"not a number: {text!r}")
    return int(text)


async def test_a_reply_cut_at_the_token_limit_is_named_as_such() -> None:
    judge = session(CutBackend('{"score": '))
    with pytest.raises(ParseError) as info:
        await judge.ask("judge", QUESTION, strict_int)
    message = str(info.value)
    assert "cut off at the token limit (max_tokens=16, finish_reason=length" in message
    calls = judge.trace.model_calls()
    assert [c.finish_reason for c in calls] == ["length", "length"]
    assert calls[0].model == "served-model"
    assert "cut off at the token limit" in calls[1].messages[-1].text  # told in the re-ask


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
