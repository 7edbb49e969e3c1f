"""SampleRun: the per-sample state every rubric and tool works with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PIL import Image

from cigeval.config import EvalConfig
from cigeval.images import EncodedImage, ImagePixels, LoadedImage, encode_image
from cigeval.sample import Sample
from cigeval.session import JudgeSession
from cigeval.tasks import TaskSpec, get_task
from cigeval.tasks.labels import SIDE_BY_SIDE_LABELS
from cigeval.tasks.spec import side_by_side_subjects
from cigeval.trace import Trace

if TYPE_CHECKING:
    from cigeval.tools.base import ToolCache


@dataclass
class SampleRun:
    """One sample being evaluated: inputs, judge session, trace and shared memo.

    ``loaded`` holds the sample's images by role as they were read; :attr:`images` gives
    their pixels, each decoded when first looked up. Images are encoded once per sample
    (:meth:`encode`, as ``config.image_encoding`` says), whatever number of calls show them.
    ``scene_graph`` is the session of a separate scene-graph model
    (``EvalConfig.scene_graph_model``); None: the judge writes them.
    """

    sample: Sample
    loaded: Mapping[str, LoadedImage]
    config: EvalConfig
    judge: JudgeSession
    trace: Trace
    tool_cache: ToolCache | None = None
    memo: dict[str, Any] = field(default_factory=dict)
    _encoded: dict[int, EncodedImage] = field(default_factory=dict)
    scene_graph: JudgeSession | None = None
    #: Encodings made before the run (off the event loop), taken by :meth:`encode`.
    _ready: dict[int, EncodedImage] = field(default_factory=dict)

    @property
    def images(self) -> ImagePixels:
        """The pixels of the sample's images by role, each decoded when first looked up."""
        return ImagePixels(self.loaded)

    @property
    def task(self) -> TaskSpec:
        """The sample's task specification."""
        return get_task(self.sample.task)

    @property
    def side_by_side(self) -> bool:
        """True when the two concept references are the halves of one side-by-side image."""
        return side_by_side_subjects(self.sample)

    def role_label(self, role: str) -> str:
        """How an image role is described to the judge for this sample (the halves of a
        side-by-side reference say which half they are)."""
        if self.side_by_side and role in SIDE_BY_SIDE_LABELS:
            return SIDE_BY_SIDE_LABELS[role]
        return self.task.role_label(role)

    def encode(self, image: LoadedImage | Image.Image) -> EncodedImage:
        """The image encoded for the model, computed once per image object (and, with a
        cache, once per image file: see :func:`cigeval.images.encode_image`). The pixels of
        a loaded image (from :attr:`images`) are encoded as that image is."""
        if isinstance(image, Image.Image):
            image = next((i for i in self.loaded.values() if i.decoded is image), image)
        key = id(image)
        cached = self._encoded.get(key)
        if cached is None:
            cached = self._ready.pop(key, None) or self._encode_now(image)
            self._encoded[key] = cached
            self.memo.setdefault("_keepalive", []).append(image)  # keep id() stable
        return cached

    def encode_made(self, name: str, make: Callable[[], Image.Image]) -> EncodedImage:
        """An image made for this sample's requests from its own images (the planner's joined
        concept images), encoded as :meth:`encode` encodes pixels, once per sample under
        ``name``: ``make`` runs on the first call only, and its pixels are let go once
        encoded (a sample waiting for its judge holds what the judge is sent, not the
        pixels; the encoding is among the images the record lists)."""
        key = f"_made:{name}"
        encoded: EncodedImage | None = self.memo.get(key)
        if encoded is None:
            image = make()
            try:
                encoded = self._encode_now(image)
            finally:
                image.close()
            self._encoded[id(encoded)] = encoded  # kept here: its id() stays its own
            self.memo[key] = encoded
        return encoded

    def _encode_now(self, image: LoadedImage | Image.Image) -> EncodedImage:
        """``image`` encoded with this run's format, encoding and tool cache."""
        return encode_image(
            image,
            self.config.image_format,
            encoding=self.config.image_encoding,
            cache=self.tool_cache,
        )
