"""ScriptedBackend: the test double other parts of cigeval (and users) rely on."""

from __future__ import annotations

import pytest

from cigeval.backends import Backend, ScriptedBackend, ScriptExhausted
from cigeval.errors import BackendError
from cigeval.messages import ModelRequest, Usage

from .support import image_request


async def test_replies_in_order_and_records_requests() -> None:
    backend = ScriptedBackend(["one", "two"], name="judge")
    assert isinstance(backend, Backend)
    assert backend.identity == "scripted:judge"
    first, second = image_request("a"), image_request("b")
    assert (await backend.complete(first)).text == "one"
    reply = await backend.complete(second)
    assert (reply.text, reply.model, reply.cached) == ("two", "scripted:judge", False)
    assert backend.requests == [first, second]
    assert backend.remaining == 0


async def test_running_out_is_a_clear_error() -> None:
    backend = ScriptedBackend(["only"], name="planner")
    await backend.complete(image_request())
    with pytest.raises(ScriptExhausted) as info:
        await backend.complete(image_request("what now?"))
    message = str(info.value)
    assert "'planner'" in message and "1 scripted replies" in message
    assert "request number 2" in message and "what now?" in message
    assert isinstance(info.value, BackendError)
    assert len(backend.requests) == 2


async def test_exceptions_in_the_script_are_raised() -> None:
    backend = ScriptedBackend([BackendError("HTTP 500"), "recovered"])
    with pytest.raises(BackendError, match="HTTP 500"):
        await backend.complete(image_request())
    assert (await backend.complete(image_request())).text == "recovered"


async def test_sync_and_async_reply_functions() -> None:
    def echo(request: ModelRequest) -> str:
        return request.messages[-1].text_content().upper()

    async def count(request: ModelRequest) -> str:
        return str(len(request.messages))

    assert (await ScriptedBackend(echo).complete(image_request("hi"))).text == "HI"
    backend = ScriptedBackend(count, usage=Usage(3, 4))
    reply = await backend.complete(image_request(system=None))
    assert reply.text == "1" and reply.usage == Usage(3, 4)
    assert backend.remaining is None and len(backend.requests) == 1


async def test_a_function_must_return_text() -> None:
    backend = ScriptedBackend(lambda request: 42)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="int"):
        await backend.complete(image_request())


def test_bad_steps_are_refused() -> None:
    with pytest.raises(TypeError):
        ScriptedBackend(["fine", 3])  # type: ignore[list-item]
    assert "2 steps" in repr(ScriptedBackend(["a", "b"]))
