"""Typed trace events: every thought, action, observation and model call of an evaluation.

A :class:`Trace` round-trips through JSONL, so any score can be explained and audited later,
and agent trajectories can be exported as fine-tuning data.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from cigeval.messages import ImagePart, Message, ModelResponse


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")
    time: float = Field(default_factory=time.time, description="Unix time of the event.")
    question_id: str | None = Field(None, description="Sub-question the event belongs to.")


class MessageRecord(BaseModel):
    """A chat message as stored in a trace: text plus the hashes of its images.

    ``text`` is the message's text parts joined by newlines. Each image is a dict with its
    ``sha256``, ``label``, ``size`` and ``at``: ``[a, b]`` says the image stood between
    ``text[:a]`` and ``text[b:]`` (``b = a + 1`` where a joining newline lay between them), so
    the message can be rebuilt with every image in its place (records written before ``at``
    existed lack it).
    """

    role: str
    text: str
    images: list[dict[str, Any]] = Field(default_factory=list)

    @classmethod
    def from_message(cls, message: Message) -> MessageRecord:
        """Record a message; images are kept as content hashes, labels, sizes and places."""
        images = []
        length, texts = 0, 0
        for part in message.parts:
            if isinstance(part, ImagePart):
                image = part.image
                at = [length, length + 1] if texts else [0, 0]
                images.append(
                    {
                        "sha256": image.sha256,
                        "label": part.label,
                        "size": [image.width, image.height],
                        "at": at,
                    }
                )
            else:
                length += len(part.text) + (1 if texts else 0)
                texts += 1
        return cls(role=message.role, text=message.text_content(), images=images)

    def parts(self) -> list[tuple[str, str | dict[str, Any]]]:
        """The message as ordered ``("text", str)`` and ``("image", image dict)`` parts.

        Images go where they stood (see ``at``); without places (older records) they come
        first, followed by the text.
        """
        places = [image.get("at") for image in self.images]
        if not _valid_places(places, len(self.text)):
            return [*(("image", image) for image in self.images), *_text_part(self.text)]
        parts: list[tuple[str, str | dict[str, Any]]] = []
        start = 0
        for image, (before, after) in zip(self.images, places, strict=True):  # type: ignore[misc]
            parts += _text_part(self.text[start:before])
            parts.append(("image", image))
            start = max(start, after)
        parts += _text_part(self.text[start:])
        return parts


def _text_part(text: str) -> list[tuple[str, str | dict[str, Any]]]:
    return [("text", text)] if text else []


def _valid_places(places: list[Any], length: int) -> bool:
    """True when every image has an ``at`` pair, in order, inside the text."""
    previous = 0
    for place in places:
        if not (isinstance(place, list | tuple) and len(place) == 2):
            return False
        before, after = place
        if not (isinstance(before, int) and isinstance(after, int)):
            return False
        if not previous <= before <= after <= length + 1 or after - before > 1:
            return False
        previous = before
    return True


class ModelCallEvent(_Event):
    """One call to the judge model."""

    type: Literal["model_call"] = "model_call"
    purpose: str = Field(description="plan, judge, scene_graph, rubric, ...")
    attempt: int = Field(
        1,
        description="1 for the first ask, 2+ for re-asks: after a reply cut off (the same "
        "request with a larger budget), too long or that could not be parsed.",
    )
    round: int = Field(1, description="The sub-question's thought/action/observation round.")
    model: str = Field(description="The model name the server reported.")
    messages: list[MessageRecord]
    reply: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = Field(
        None, description="Why generation stopped: stop, length (cut at max_tokens), ..."
    )
    endpoint: str | None = Field(
        None, description="The server that answered, without credentials (None: in-process)."
    )

    @classmethod
    def build(
        cls,
        purpose: str,
        messages: Iterable[Message],
        response: ModelResponse,
        attempt: int = 1,
        question_id: str | None = None,
        round: int = 1,
    ) -> ModelCallEvent:
        """Build the event from the request messages and the backend response."""
        return cls(
            purpose=purpose,
            attempt=attempt,
            round=round,
            question_id=question_id,
            model=response.model,
            messages=[MessageRecord.from_message(m) for m in messages],
            reply=response.text,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            latency_s=response.latency_s,
            cached=response.cached,
            finish_reason=response.finish_reason,
            endpoint=response.endpoint,
        )


class ThoughtEvent(_Event):
    """The agent's stated reasoning before acting."""

    type: Literal["thought"] = "thought"
    text: str
    round: int = Field(1, description="The round the thought leads into.")


class ActionEvent(_Event):
    """The agent chose a tool (or none) for a sub-question."""

    type: Literal["action"] = "action"
    tool: str | None
    query: str | None = None
    round: int = Field(1, description="The sub-question's thought/action/observation round.")


class ObservationEvent(_Event):
    """What a tool returned."""

    type: Literal["observation"] = "observation"
    tool: str
    text: str
    round: int = Field(1, description="The sub-question's thought/action/observation round.")
    highlighted: bool = False
    boxes: dict[str, list[list[float]]] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)


class JudgementEvent(_Event):
    """A sub-question's final score and reasoning."""

    type: Literal["judgement"] = "judgement"
    score: float
    reasoning: str


class ErrorEvent(_Event):
    """Something went wrong; ``stage`` says where."""

    type: Literal["error"] = "error"
    stage: str
    message: str


TraceEvent = Annotated[
    ModelCallEvent | ThoughtEvent | ActionEvent | ObservationEvent | JudgementEvent | ErrorEvent,
    Field(discriminator="type"),
]
_EVENT_ADAPTER: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)


class Trace(BaseModel):
    """An ordered list of events with JSONL round-trip."""

    events: list[TraceEvent] = Field(default_factory=list)

    def add(self, event: TraceEvent) -> None:
        """Append an event."""
        self.events.append(event)

    def model_calls(self) -> list[ModelCallEvent]:
        """Only the model-call events."""
        return [e for e in self.events if isinstance(e, ModelCallEvent)]

    def to_jsonl(self) -> str:
        """One JSON object per line."""
        return "".join(e.model_dump_json() + "\n" for e in self.events)

    @classmethod
    def from_jsonl(cls, text: str) -> Trace:
        """Parse what :meth:`to_jsonl` wrote."""
        events = [
            _EVENT_ADAPTER.validate_python(json.loads(line))
            for line in text.splitlines()
            if line.strip()
        ]
        return cls(events=events)
