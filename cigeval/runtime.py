"""SampleRun: the per-sample state every rubric and tool works with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from cigeval.config import EvalConfig
from cigeval.images import EncodedImage, load_image
from cigeval.judge import JudgeSession
from cigeval.sample import Sample
from cigeval.tools.base import ToolCache
from cigeval.trace import Trace


def load_sample_images(sample: Sample) -> dict[str, Image.Image]:
    """Load every image of ``sample`` by role (``subjects`` become ``subject_1``/``subject_2``,
    ``outputs`` become ``output_1``...). A side-by-side ``subject`` image of a multi-concept
    sample also serves as ``subject_1`` and ``subject_2``. Raises InputError naming the image.
    """
    loaded: dict[str, Image.Image] = {}

    def load(value: Any, role: str) -> Image.Image:
        return load_image(value, role=role, sample_id=sample.id, base_dir=sample.base_dir)

    for role, value in sample.images.provided().items():
        if role == "subjects":
            for index, item in enumerate(value, start=1):
                loaded[f"subject_{index}"] = load(item, f"subjects[{index - 1}]")
        elif role == "outputs":
            for index, item in enumerate(value, start=1):
                loaded[f"output_{index}"] = load(item, f"outputs[{index - 1}]")
        else:
            loaded[role] = load(value, role)
    if sample.task == "multi_concept_ic" and "subject" in loaded and "subject_1" not in loaded:
        loaded["subject_1"] = loaded["subject_2"] = loaded["subject"]
    if "mask" in loaded and "source" in loaded and loaded["mask"].size != loaded["source"].size:
        # A mask of another size is resized to the source, the only sensible conversion.
        loaded["mask"] = loaded["mask"].resize(loaded["source"].size, Image.Resampling.NEAREST)
    return loaded


@dataclass
class SampleRun:
    """One sample being evaluated: inputs, judge session, trace and shared memo.

    Images are encoded once per sample (:meth:`encode`), whatever number of calls show them.
    """

    sample: Sample
    images: dict[str, Image.Image]
    config: EvalConfig
    judge: JudgeSession
    trace: Trace
    tool_cache: ToolCache | None = None
    memo: dict[str, Any] = field(default_factory=dict)
    _encoded: dict[int, EncodedImage] = field(default_factory=dict)

    def encode(self, image: Image.Image) -> EncodedImage:
        """The image encoded for the model, computed once per image object."""
        key = id(image)
        cached = self._encoded.get(key)
        if cached is None:
            cached = EncodedImage.from_pil(image, self.config.image_format)
            self._encoded[key] = cached
            self.memo.setdefault("_keepalive", []).append(image)  # keep id() stable
        return cached
