"""Provider-neutral chat messages: what every backend receives and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # only a type here: numpy and Pillow load with cigeval.images
    from cigeval.images import EncodedImage

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class TextPart:
    """A piece of text in a message."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image in a message; ``label`` says what it is (e.g. 'source', 'output')."""

    image: EncodedImage
    label: str = ""


Part = TextPart | ImagePart


@dataclass(frozen=True)
class Message:
    """One chat message: a role and an ordered list of text and image parts."""

    role: Role
    parts: tuple[Part, ...]
    #: Sent as a list of parts even when it holds one text part (the official client sends
    #: its text-only repair request so); the same message to every other end.
    listed: bool = False

    @classmethod
    def text(cls, role: Role, text: str) -> Message:
        """A message holding a single text part."""
        return cls(role, (TextPart(text),))

    def text_content(self) -> str:
        """The concatenated text parts (images omitted)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    def images(self) -> list[EncodedImage]:
        """The images in this message, in order."""
        return [p.image for p in self.parts if isinstance(p, ImagePart)]


#: How a sampling setting that is not sent is recorded (settings, provenance, reports).
PROVIDER_DEFAULT = "provider default"


@dataclass(frozen=True)
class GenerationSettings:
    """Settings that can change a model's answer; all of them are part of the cache key.

    None: not sent, the provider's default applies (the official CIGEval client sends no
    sampling parameter at all; GPT-4o then samples at temperature 1 with no cap).
    """

    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    seed: int | None = 0
    top_p: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        """The settings as a plain dict (for cache keys and traces)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "top_p": self.top_p,
        }


#: Without an explicit cap, a reply cut at the token limit may be asked again with up to this
#: many times the token budget (``EvalConfig.max_tokens_cap``).
TOKEN_CAP_FACTOR = 4
#: The longest reply used and recorded by default (``EvalConfig.max_reply_chars``): 64 Ki
#: characters.
DEFAULT_MAX_REPLY_CHARS = 65_536


@dataclass(frozen=True)
class Usage:
    """Token counts of one call (zeros when the backend does not report them)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class ModelRequest:
    """A complete request: messages plus generation settings."""

    messages: tuple[Message, ...]
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    #: sha256 of the prompt templates the messages were rendered from
    #: (:func:`cigeval.prompts.templates_sha256`); part of the cache key when set.
    prompts_sha256: str | None = None
    #: How many identical requests the same sample sent before this one (part of the cache
    #: key when not 0): the official code asks some questions twice and samples anew each
    #: time, so the second asking must not be answered with the first one's reply.
    ordinal: int = 0
    #: The sample whose own question this is (part of the cache key when set): a tool's model
    #: call (a scene graph), and any call sampled at the provider's default or a positive
    #: temperature, of one sample is never answered with another sample's reply, as the
    #: official code asks each sample anew; a re-run of the same sample replays it.
    scope: str | None = None


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the most likely alternatives at its
    place (``top``: (token, logprob) pairs), as OpenAI-compatible servers report them when
    asked (``logprobs: true, top_logprobs: N``)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ModelResponse:
    """A backend's answer: the reply text plus bookkeeping.

    ``model`` is the model name the server reported (else the requested one).
    ``finish_reason`` is why generation stopped, as the server says it (``stop``, ``length``
    when the reply was cut at ``max_tokens``, ...), or None when unknown. ``endpoint`` is the
    server that answered (without credentials), or None for in-process models.
    """

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = None
    endpoint: str | None = None
    #: The reply's tokens with their log-probabilities, when the backend was asked for them
    #: (``OpenAIBackend.top_logprobs``); else None.
    logprobs: tuple[TokenLogprob, ...] | None = None


#: The one vocabulary of finish reasons every backend reports (``ModelResponse.finish_reason``):
#: ``stop`` (the reply is complete), ``length`` (cut at the token limit), ``content_filter``
#: (withheld or cut by the provider's filter), ``tool_calls`` (the model called a provider
#: tool), ``unknown`` (the provider said something else or nothing).
FINISH_REASONS = ("stop", "length", "content_filter", "tool_calls", "unknown")

#: Provider spellings of the finish reasons (OpenAI, Anthropic, Gemini, transformers, ...).
_FINISH_REASON_ALIASES = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "eos_token": "stop",
    "finish_reason_stop": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_length": "length",
    "content_filter": "content_filter",
    "refusal": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
    "image_safety": "content_filter",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
}

#: Finish reasons that mean the reply is not complete: never read a score from such a reply.
UNFINISHED_REASONS = frozenset({"length", "content_filter"})


def normalize_finish_reason(raw: object) -> str | None:
    """A provider's finish reason in :data:`FINISH_REASONS` (None stays None: not reported).

    Case and spelling variants are accepted (``MAX_TOKENS``, ``end_turn``, ``FinishReason.STOP``);
    anything not recognised is ``unknown``.
    """
    if raw is None:
        return None
    text = str(getattr(raw, "value", raw)).strip().lower()
    text = text.rsplit(".", 1)[-1]  # enum reprs such as "FinishReason.STOP"
    return _FINISH_REASON_ALIASES.get(text, "unknown")
