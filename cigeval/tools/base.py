"""The Tool protocol, what a tool receives (ToolContext) and what it returns (ToolResult)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:  # types only: the tool settings the command line reads stay light
    from PIL import Image

    from cigeval.config import EvalConfig
    from cigeval.images import EncodedImage
    from cigeval.messages import Message
    from cigeval.sample import Sample
    from cigeval.tasks.spec import SubQuestion


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in pixel coordinates of the image it was found in.

    ``found_by`` names the tool that found the box when it is not the tool returning it (a
    tool that runs another, as Zoom runs Difference or Grounding); None: the returning tool.
    """

    x0: float
    y0: float
    x1: float
    y1: float
    label: str | None = None
    score: float | None = None
    found_by: str | None = None

    def as_list(self) -> list[float]:
        """``[x0, y0, x1, y1]``."""
        return [self.x0, self.y0, self.x1, self.y1]

    @property
    def area(self) -> float:
        """Area in square pixels (0 for degenerate boxes)."""
        return max(0.0, self.x1 - self.x0) * max(0.0, self.y1 - self.y0)


@dataclass(frozen=True)
class ToolView:
    """An image a tool adds to what the judge sees (shown after the sub-question's images,
    never in place of one): ``key`` names it in the sub-score's ``tool_image_ids`` and the
    request (e.g. ``output (zoom 1)``), ``role`` is the image it was made from, ``caption``
    what the judge is told it is."""

    key: str
    role: str
    image: Image.Image
    caption: str


@dataclass
class ToolResult:
    """What a tool returns.

    ``text`` is the observation given to the judge. ``images`` replaces input images by role
    (e.g. the highlighted output); ``views`` are images shown after them (e.g. Zoom's
    enlarged crops). ``boxes`` lists the regions found, by image role, each in the pixels of
    that image as the sample gave it (never of a resized copy): they become the sub-score's
    ``evidence``. ``highlighted`` is True only when some region really was highlighted: only
    then is the judge told to focus on the highlighted parts.
    """

    tool: str
    text: str
    images: dict[str, Image.Image] = field(default_factory=dict)
    boxes: dict[str, list[Box]] = field(default_factory=dict)
    highlighted: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    views: list[ToolView] = field(default_factory=list)


class ToolCache(Protocol):
    """Persistent store for expensive tool outputs (JSON-serialisable values)."""

    def get(self, key: str) -> Any | None:
        """The stored value or None."""
        ...

    def set(self, key: str, value: Any) -> None:
        """Store a value."""
        ...


#: Signature of the model-call function tools get: (purpose, messages) -> reply text.
CallModel: TypeAlias = "Callable[[str, list[Message]], Awaitable[str]]"


@dataclass
class ToolContext:
    """Everything a tool may use for one sub-question of one sample.

    ``images`` holds the sample's loaded images by role (each decoded when first looked up);
    multi-concept subjects appear as ``subject_1`` and ``subject_2``. ``memo`` is shared by
    all sub-questions of the sample (e.g. one scene graph per distinct image). ``encode``
    returns the sample's cached encoding of an image. ``call_model`` asks the judge model and
    records the call in the trace;
    ``call_scene_graph_model`` asks the scene-graph model (``EvalConfig.scene_graph_model``),
    None when the judge writes the scene graphs too. ``found`` holds the regions the
    sub-question's earlier rounds' tools found, by image role, each in that image's pixels.
    """

    sample: Sample
    question: SubQuestion
    images: Mapping[str, Image.Image]
    config: EvalConfig
    query: str | None
    call_model: CallModel
    encode: Callable[[Image.Image], EncodedImage]
    memo: dict[str, Any] = field(default_factory=dict)
    cache: ToolCache | None = None
    call_scene_graph_model: CallModel | None = None
    found: dict[str, list[Box]] = field(default_factory=dict)

    def question_images(self) -> dict[str, Image.Image]:
        """The images this sub-question shows the judge, by role, in order."""
        return {
            role: self.images[role] for role in self.question.image_roles if role in self.images
        }


@runtime_checkable
class Tool(Protocol):
    """A tool the agent can choose for a sub-question.

    ``name`` is what the planner writes; ``description`` tells the planner when it helps.
    """

    name: str
    description: str

    async def run(self, ctx: ToolContext) -> ToolResult:
        """Run on the sub-question's images and return an observation."""
        ...
