"""LangChainBackend with langchain-core's fake chat models: what they receive and return."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import Field

from cigeval.backends import Backend, LangChainBackend
from cigeval.errors import BackendError
from cigeval.messages import GenerationSettings, Message, ModelRequest

from .support import image_request, make_image


class RecordingChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that also keeps the messages and call arguments it got."""

    received: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        self.received.append(list(messages))
        self.call_kwargs.append(dict(kwargs))
        return super()._generate(messages, stop, run_manager, **kwargs)


def recording(*replies: AIMessage) -> RecordingChatModel:
    return RecordingChatModel(messages=iter(replies))


async def test_messages_are_converted_with_image_blocks() -> None:
    model = recording(AIMessage(content="Score: 8"))
    backend = LangChainBackend(model)
    assert isinstance(backend, Backend)
    red, blue = make_image((255, 0, 0)), make_image((0, 0, 255))
    response = await backend.complete(image_request("Compare.", (red, blue)))
    assert response.text == "Score: 8"
    [sent] = model.received
    assert isinstance(sent[0], SystemMessage) and sent[0].content == "You are a judge."
    assert isinstance(sent[1], HumanMessage)
    assert sent[1].content == [
        {"type": "text", "text": "Compare."},
        {"type": "image_url", "image_url": {"url": red.data_uri()}},
        {"type": "image_url", "image_url": {"url": blue.data_uri()}},
    ]
    assert model.call_kwargs == [{}]  # settings are not passed unless asked for


async def test_assistant_turns_and_usage_metadata() -> None:
    usage: Any = {"input_tokens": 120, "output_tokens": 9, "total_tokens": 129}
    model = recording(AIMessage(content="done", usage_metadata=usage))
    request = ModelRequest(
        (
            Message.text("user", "plan?"),
            Message.text("assistant", "use grounding"),
            Message.text("user", "judge"),
        )
    )
    response = await LangChainBackend(model).complete(request)
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (120, 9)
    kinds = [type(m) for m in model.received[0]]
    assert kinds == [HumanMessage, AIMessage, HumanMessage]
    assert model.received[0][1].content == "use grounding"


async def test_settings_can_be_passed_through() -> None:
    model = recording(AIMessage(content="x"))
    settings = GenerationSettings(temperature=0.2, max_tokens=50, seed=3, top_p=None)
    await LangChainBackend(model, pass_settings=True).complete(image_request(settings=settings))
    assert model.call_kwargs[0] == {"temperature": 0.2, "max_tokens": 50, "seed": 3}


async def test_list_content_replies_are_joined() -> None:
    blocks = [{"type": "text", "text": "Score"}, {"type": "text", "text": ": 6"}]
    model = recording(AIMessage(content=blocks))  # type: ignore[arg-type]
    assert (await LangChainBackend(model).complete(image_request())).text == "Score: 6"


async def test_identity_and_errors() -> None:
    fake = FakeListChatModel(responses=[])
    backend = LangChainBackend(fake)
    assert backend.identity == "langchain:FakeListChatModel" and not backend.has_model_name
    with pytest.raises(BackendError, match="langchain:FakeListChatModel"):
        await backend.complete(image_request())

    class Named(FakeListChatModel):
        model_name: str = "llava-13b"

    assert LangChainBackend(Named(responses=["a"])).identity == "langchain:llava-13b"


def test_refuses_non_chat_models() -> None:
    with pytest.raises(TypeError):
        LangChainBackend(object())


async def test_finish_reason_and_served_model_come_from_the_response_metadata() -> None:
    openai_style = AIMessage(
        content="cut", response_metadata={"finish_reason": "length", "model_name": "gpt-x-0613"}
    )
    anthropic_style = AIMessage(content="cut too", response_metadata={"stop_reason": "max_tokens"})
    gemini_style = AIMessage(content="withheld", response_metadata={"finish_reason": "SAFETY"})
    anthropic_done = AIMessage(content="done", response_metadata={"stop_reason": "end_turn"})
    backend = LangChainBackend(
        recording(
            openai_style, anthropic_style, gemini_style, anthropic_done, AIMessage(content="ok")
        )
    )
    first = await backend.complete(image_request())
    assert (first.finish_reason, first.model) == ("length", "gpt-x-0613")
    second = await backend.complete(image_request())
    assert (second.finish_reason, second.model) == ("length", backend.model_name)
    # every provider's spelling lands in the one vocabulary
    assert (await backend.complete(image_request())).finish_reason == "content_filter"
    assert (await backend.complete(image_request())).finish_reason == "stop"
    assert (await backend.complete(image_request())).finish_reason is None
