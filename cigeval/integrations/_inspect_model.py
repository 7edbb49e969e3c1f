"""The judge's calls as inspect_ai model calls (imports inspect_ai: loaded with the scorer).

:class:`InspectRoute` is a :data:`cigeval.backends.routing.Route`: each call a judge makes goes
through an inspect :class:`~inspect_ai.model.Model` whose model API (:class:`CigevalJudgeAPI`,
registered as the ``cigeval`` provider) answers with the judge's own backend. inspect's model
layer then does for the judge what it does for any model: a ``ModelEvent`` in the sample's
transcript (the messages with their images as data URIs, the reply, the tokens), the usage in
the eval's and the sample's totals (``stats.model_usage["cigeval/<judge>"]``), its connection
limit (``--max-connections``) and any token limit in force. The request the backend gets is
cigeval's own, unchanged: the messages shown to inspect are a faithful copy for the record.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    StopReason,
    get_model,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from inspect_ai.util import LimitExceededError

from cigeval.backends.base import Backend, backend_endpoint
from cigeval.backends.routing import CallLabel
from cigeval.messages import ImagePart, Message, ModelRequest, ModelResponse

#: inspect's provider name for cigeval's judges: their calls are ``cigeval/<judge identity>``.
PROVIDER = "cigeval"

#: cigeval's finish reasons as inspect's stop reasons (any other: ``unknown``).
_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


@dataclass
class _Call:
    """One call on its way through inspect: cigeval's request, then the backend's answer."""

    request: ModelRequest
    label: CallLabel
    response: ModelResponse | None = None


_CALL: ContextVar[_Call | None] = ContextVar("cigeval_inspect_call", default=None)


@modelapi(name=PROVIDER)
class CigevalJudgeAPI(ModelAPI):
    """inspect's model API for a cigeval judge: answers the call :class:`InspectRoute` is
    making with the judge's backend (cigeval's request as it is, not inspect's copy)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 (inspect's signature)
        backend: Backend | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if backend is None:
            raise ValueError(
                "the cigeval model provider answers cigeval's judge calls only: "
                "use cigeval.integrations.inspect_ai.inspect_scorer"
            )
        self.backend = backend

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """The backend's answer to the call in progress, as inspect's output."""
        call = _CALL.get()
        if call is None:
            raise RuntimeError(
                f"cigeval/{self.model_name} answers cigeval's judge calls only, made by "
                "inspect_scorer; it cannot be asked directly"
            )
        response = await self.backend.complete(call.request)
        call.response = response
        return _output(response, call.label)

    def connection_key(self) -> str:
        """One connection pool per judge and server set."""
        return f"{self.backend.identity}@{backend_endpoint(self.backend) or 'in-process'}"


class JudgeModels:
    """One inspect ``Model`` per judge backend, made on its first call (shared by a scorer's
    samples)."""

    def __init__(self) -> None:
        self._models: dict[int, tuple[Backend, Model]] = {}

    def model(self, backend: Backend) -> Model:
        """The inspect model that answers with ``backend``."""
        known = self._models.get(id(backend))
        if known is None or known[0] is not backend:
            model = get_model(f"{PROVIDER}/{backend.identity}", memoize=False, backend=backend)
            known = self._models[id(backend)] = (backend, model)
        return known[1]


class InspectRoute:
    """One sample's route (:func:`cigeval.backends.routing.routing_calls`) through inspect's
    model layer, with the models of ``models``.

    An inspect limit that a call exceeds is raised by inspect; cigeval would take it for a
    failed call, so it is kept in :attr:`exceeded` for the scorer to raise again."""

    def __init__(self, models: JudgeModels) -> None:
        self.models = models
        #: The first inspect limit a routed call ran into (None: none did).
        self.exceeded: LimitExceededError | None = None

    async def __call__(
        self, backend: Backend, request: ModelRequest, label: CallLabel
    ) -> ModelResponse:
        model = self.models.model(backend)
        call = _Call(request, label)
        token = _CALL.set(call)
        try:
            await model.generate(_messages(request.messages), config=_config(request))
        except LimitExceededError as exc:
            self.exceeded = self.exceeded or exc
            raise
        finally:
            _CALL.reset(token)
        if call.response is None:  # pragma: no cover - inspect returned without calling
            raise RuntimeError(f"inspect did not call the judge {backend.identity}")
        return call.response


def _messages(messages: tuple[Message, ...]) -> list[ChatMessage]:
    """cigeval's messages as inspect's, text and images in their order (images as the data
    URIs the judge was sent)."""
    converted: list[ChatMessage] = []
    for message in messages:
        content: list[ContentText | ContentImage] = [
            ContentImage(image=part.image.data_uri())
            if isinstance(part, ImagePart)
            else ContentText(text=part.text)
            for part in message.parts
        ]
        if message.role == "system":
            converted.append(ChatMessageSystem(content=content))
        elif message.role == "assistant":
            converted.append(ChatMessageAssistant(content=content))
        else:
            converted.append(ChatMessageUser(content=content))
    return converted


def _config(request: ModelRequest) -> GenerateConfig:
    """The request's sampling settings as inspect records them (None: not sent)."""
    settings = request.settings
    return GenerateConfig(
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
        top_p=settings.top_p,
    )


def _output(response: ModelResponse, label: CallLabel) -> ModelOutput:
    """The backend's answer as inspect's output: usage only for a call the judge answered now
    (an answer from cigeval's cache cost nothing this time)."""
    stop = _STOP_REASONS.get(response.finish_reason or "", "unknown")
    output = ModelOutput.from_content(model=response.model, content=response.text, stop_reason=stop)
    usage = response.usage
    if not response.cached and usage.total_tokens:
        output.usage = ModelUsage(
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
        )
    output.metadata = {
        "cigeval": {
            "purpose": label.purpose,
            "question_id": label.question_id,
            "attempt": label.attempt,
            "round": label.round,
            "cached": response.cached,
            "finish_reason": response.finish_reason,
            "endpoint": response.endpoint,
        }
    }
    return output
