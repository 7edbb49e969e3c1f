"""Grounding: find a noun phrase in the images with GroundingDINO (paper §3.2, Grounding).

Uses transformers' zero-shot object detection classes, so any GroundingDINO checkpoint that
transformers reads works: a hub name or a local directory written by ``save_pretrained``.
torch and transformers are imported only when a detector first runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from cigeval._caller import in_callers_words
from cigeval._hub import ensure_loadable
from cigeval.errors import ConfigError, MissingDependency, PreflightError, ToolError
from cigeval.images import to_rgb
from cigeval.registry import normalize_name
from cigeval.tools._format import (
    FOCUS_TEXT,
    box_from_record,
    box_record,
    fmt_box,
    highlight_note,
    percent,
)
from cigeval.tools._memo import run_once
from cigeval.tools.base import Box, ToolContext, ToolResult
from cigeval.tools.boxes import clip_box
from cigeval.tools.highlight import (
    NEARLY_WHOLE_IMAGE,
    coverage,
    highlight_pixels,
    pixel_spans,
)
from cigeval.tools.registry import tool_names
from cigeval.tools.settings import GroundingConfig

if TYPE_CHECKING:
    from cigeval.config import EvalConfig


def normalize_query(query: str, form: str = "phrases") -> str:
    """GroundingDINO's prompt form: lower-case phrases, each ending with '.'.

    ``"Red car, Dog"`` becomes ``"red car. dog."``. ``form="as_given"`` is what the official
    code passes (GroundingDINO itself only lower-cases, strips and ends the text with '.'):
    ``"Red car, Dog"`` becomes ``"red car, dog."``. Raises :class:`ToolError` when no phrase
    is left.
    """
    if form == "as_given":
        text = query.lower().strip()
        if not text.strip(" .;,\n"):
            raise ToolError(f"empty grounding query {query!r}: name the object to look for")
        return text if text.endswith(".") else text + "."
    phrases = [p.strip() for p in re.split(r"[.;,\n]+", query.lower())]
    phrases = [" ".join(p.split()) for p in phrases if p.strip()]
    if not phrases:
        raise ToolError(f"empty grounding query {query!r}: name the object to look for")
    return " ".join(f"{p}." for p in phrases)


@dataclass
class _Loaded:
    processor: Any
    model: Any
    device: str
    # Fast tokenizers fail with "Already borrowed" when one instance is used from two
    # threads at once, and parallel forwards on a CPU only oversubscribe the cores.
    lock: threading.Lock


_MODELS: dict[tuple[str, str], _Loaded] = {}
_MODELS_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple[str, str], threading.Lock] = {}
# A checkpoint that failed to load fails again at once with the same error: weights that
# are not there cost one attempt per process, not minutes per sample.
_FAILURES: dict[tuple[str, str], ConfigError | MissingDependency] = {}


def clear_detector_cache() -> None:
    """Forget every loaded GroundingDINO model (frees memory; the next detect reloads) and
    every remembered load failure (the next detect tries again)."""
    with _MODELS_LOCK:
        _MODELS.clear()
        _KEY_LOCKS.clear()
        _FAILURES.clear()


def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingDependency("torch", "grounding", "The Grounding tool") from None
    return torch


def _load(checkpoint: str, device: str) -> _Loaded:
    key = (checkpoint, device)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        if key in _FAILURES:
            raise _FAILURES[key].with_traceback(None)
        key_lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    # A per-checkpoint lock: two threads never load the same model twice, while a slow
    # download of one checkpoint does not block detection with another.
    with key_lock:
        with _MODELS_LOCK:
            if key in _MODELS:
                return _MODELS[key]
            if key in _FAILURES:
                raise _FAILURES[key].with_traceback(None)
        try:
            return _load_uncached(key)
        except (ConfigError, MissingDependency) as exc:
            with _MODELS_LOCK:
                _FAILURES[key] = exc
            raise


def _load_uncached(key: tuple[str, str]) -> _Loaded:
    """Load a checkpoint (under its key lock) and remember it."""
    checkpoint, device = key
    _import_torch()
    ensure_loadable(checkpoint, "the GroundingDINO checkpoint")
    try:
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
    except ImportError:
        raise MissingDependency("transformers", "grounding", "The Grounding tool") from None
    try:
        processor = AutoProcessor.from_pretrained(checkpoint)
        model = AutoModelForZeroShotObjectDetection.from_pretrained(checkpoint)
        model = model.to(device).eval()
    except Exception as exc:
        # A setup problem shared by every sample, never a per-sample tool failure.
        raise ConfigError(
            f"could not load the GroundingDINO checkpoint {checkpoint!r}: {exc}. Pass a "
            "local directory path (one written by save_pretrained) or check the model "
            "name; downloading from the Hugging Face hub needs network access."
        ) from exc
    loaded = _Loaded(processor, model, device, threading.Lock())
    with _MODELS_LOCK:
        _MODELS[key] = loaded
    return loaded


class GroundingDinoDetector:
    """Open-set object detection with a GroundingDINO checkpoint.

    Nothing is loaded until the first :meth:`detect`; the model is then shared by every
    detector of the same ``(checkpoint, device)`` in the process. ``device=None`` means CUDA
    when available, else CPU.
    """

    def __init__(
        self,
        checkpoint: str = "IDEA-Research/grounding-dino-tiny",
        box_threshold: float = 0.35,
        text_threshold: float = 0.25,
        device: str | None = None,
        query_form: str = "phrases",
    ) -> None:
        self.checkpoint = checkpoint
        self.box_threshold = box_threshold
        self.text_threshold = text_threshold
        self._device = device
        #: How a query becomes the detector's text (:func:`normalize_query`).
        self.query_form = query_form

    @classmethod
    def from_config(cls, config: GroundingConfig) -> GroundingDinoDetector:
        """A detector with the settings of ``config``."""
        return cls(
            config.checkpoint,
            config.box_threshold,
            config.text_threshold,
            config.device,
            config.query_form,
        )

    @property
    def device(self) -> str:
        """The torch device the model runs on (resolves ``None`` on first use)."""
        if self._device is None:
            torch = _import_torch()
            self._device = "cuda" if torch.cuda.is_available() else "cpu"
        return self._device

    def cache_key(self, image_sha256: str, query: str) -> str:
        """A key naming everything that decides the boxes found in one image for one query."""
        parts = [
            "grounding/v1",
            image_sha256,
            normalize_query(query, self.query_form),
            self.checkpoint,
            repr(self.box_threshold),
            repr(self.text_threshold),
        ]
        return "grounding:" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()

    def detect(self, image: Image.Image, query: str) -> list[Box]:
        """Boxes (pixel coordinates of ``image``) for the phrases of ``query``, best first.

        Blocking: from async code run it in a worker thread.
        """
        text = normalize_query(query, self.query_form)
        loaded = _load(self.checkpoint, self.device)
        torch = _import_torch()
        rgb = to_rgb(image)
        with loaded.lock, torch.inference_mode():
            inputs = loaded.processor(images=rgb, text=text, return_tensors="pt")
            inputs = inputs.to(loaded.device)
            outputs = loaded.model(**inputs)
            results = loaded.processor.post_process_grounded_object_detection(
                outputs,
                inputs["input_ids"],
                threshold=self.box_threshold,
                text_threshold=self.text_threshold,
                target_sizes=[(rgb.height, rgb.width)],
            )
        special = set(getattr(loaded.processor.tokenizer, "all_special_tokens", []))
        found = results[0]
        boxes: list[Box] = []
        labels = found.get("text_labels") or found.get("labels") or []
        for coords, score, label in zip(
            found["boxes"].tolist(), found["scores"].tolist(), labels, strict=False
        ):
            x0, y0, x1, y1 = (float(v) for v in coords)
            named = Box(x0, y0, x1, y1, label=_clean_label(label, special), score=float(score))
            box = clip_box(named, rgb.width, rgb.height)
            if box is not None:
                boxes.append(box)
        boxes.sort(key=lambda b: b.score or 0.0, reverse=True)
        return boxes


def _clean_label(label: Any, special: set[str]) -> str:
    words = [w for w in str(label).split() if w not in special]
    return " ".join(words).strip(" .") or "object"


def best_per_phrase(boxes: list[Box]) -> list[Box]:
    """The official code's selection: drop every box that strictly contains (on all four
    sides) a smaller box already kept, then keep the highest-scoring box of each phrase
    (label). Best first."""
    kept: list[Box] = []
    for box in sorted(boxes, key=lambda b: b.area):
        if not any(_strictly_contains(box, inner) for inner in kept):
            kept.append(box)
    best: dict[str | None, Box] = {}
    for box in sorted(kept, key=lambda b: b.score or 0.0, reverse=True):
        best.setdefault(box.label, box)
    return list(best.values())


def _strictly_contains(outer: Box, inner: Box) -> bool:
    return (
        outer.x0 < inner.x0 and outer.y0 < inner.y0 and inner.x1 < outer.x1 and inner.y1 < outer.y1
    )


def whole_pixel_box(box: Box) -> Box:
    """``box`` with each coordinate cut to a whole pixel towards zero, as the official code
    turns the detector's boxes into integers before selecting and highlighting them."""
    return Box(
        float(int(box.x0)),
        float(int(box.y0)),
        float(int(box.x1)),
        float(int(box.y1)),
        label=box.label,
        score=box.score,
    )


def select_boxes(boxes: list[Box], config: GroundingConfig) -> list[Box]:
    """The boxes Grounding highlights: every box found (``boxes="all"``), or the official
    code's whole-pixel boxes and selection (``best_per_phrase``)."""
    if config.boxes == "best_per_phrase":
        return best_per_phrase([whole_pixel_box(b) for b in boxes])
    return boxes


class GroundingTool:
    """The Grounding tool: where is the queried object in each image of the sub-question?

    The query (see :func:`default_query`) is the official code's query of the sub-question
    (``grounding.queries="official"``: the prompt, the instruction, the subject or concept
    name, or "background"), or the planner's noun phrase, else the sub-question's default
    query (``planner``). Found boxes are highlighted (with ``highlight_large_boxes=
    "undimmed"``, an image whose boxes cover nearly all of it is left undimmed); results are
    memoised per sample and stored in ``ctx.cache`` so one image is never searched twice for
    the same phrase. The judge is told to look at the highlighted parts (``tool_text=
    "focus"``) or given the boxes found (``detailed``).
    """

    name = "Grounding"
    description = (
        "Locates a named object (a short noun phrase such as 'red car') in the images with an "
        "open-set detector and highlights where it is. Useful when a question is about one "
        "object: whether it is present, its look, or its position."
    )
    #: The paper's description, shown to the planner under ``planner_prompt="paper"``.
    paper_description = (
        "Focuses on the areas of an image related to specific objects: finds them and "
        "highlights them."
    )

    def __init__(self, detector: GroundingDinoDetector | None = None) -> None:
        """``detector`` overrides the one built from ``ctx.config.grounding``."""
        self._detector = detector

    def detector_for(self, config: GroundingConfig) -> GroundingDinoDetector:
        """The detector used for runs with ``config``."""
        return self._detector or GroundingDinoDetector.from_config(config)

    def preflight(self, config: EvalConfig) -> None:
        """Load the GroundingDINO weights now (blocking); :class:`PreflightError` names the
        ways out when they cannot be loaded. A detector given to this tool that does its own
        detection (a subclass overriding ``detect``) loads nothing here."""
        detector = self.detector_for(config.grounding)
        if type(detector).detect is not GroundingDinoDetector.detect:
            return
        try:
            _load(detector.checkpoint, detector.device)
        except MissingDependency as exc:
            raise PreflightError(f"{exc}; {_without_grounding(config)}") from exc
        except ConfigError as exc:
            # the first line of the cause, whole: cutting it left half a sentence
            cause = (str(exc.__cause__ or exc).strip().splitlines() or ["no reason given"])[0]
            checkpoint = in_callers_words(
                "--grounding-checkpoint DIR", 'grounding={"checkpoint": DIR}'
            )
            raise PreflightError(
                f"the Grounding tool cannot load the GroundingDINO checkpoint "
                f"{detector.checkpoint!r} ({cause}). Pass {checkpoint} (a local "
                f"copy of the weights, e.g. one written by save_pretrained), or "
                f"{_without_grounding(config)}"
            ) from exc

    async def run(self, ctx: ToolContext) -> ToolResult:
        """Detect the query in every image the sub-question shows and highlight it."""
        query = default_query(ctx)
        if not query or not query.strip():
            return ToolResult(
                tool=self.name,
                text=(
                    "Grounding needs the name of an object to look for, and none was given. "
                    "Nothing was searched and nothing is highlighted."
                ),
            )
        try:
            normalize_query(query)
        except ToolError:
            return ToolResult(
                tool=self.name,
                text=f"The grounding query {query!r} names no object. Nothing is highlighted.",
            )
        detector = self.detector_for(ctx.config.grounding)
        shown = {r: img for r, img in ctx.question_images().items() if r != "mask"}
        detected = {
            role: await self._detect(ctx, detector, image, query) for role, image in shown.items()
        }
        found, covered, images = await asyncio.to_thread(_select_and_show, ctx, shown, detected)
        if ctx.config.tool_text == "focus":
            text = FOCUS_TEXT
        else:
            text = _describe(query, found, covered, set(images))
        return ToolResult(
            tool=self.name,
            text=text,
            images=images,
            boxes={role: boxes for role, boxes in found.items() if boxes},
            highlighted=bool(images),
            data={
                "query": query,
                "boxes": {role: [box_record(b) for b in boxes] for role, boxes in found.items()},
                "highlight_coverage": covered,
            },
        )

    async def _detect(
        self, ctx: ToolContext, detector: GroundingDinoDetector, image: Image.Image, query: str
    ) -> list[Box]:
        key = detector.cache_key(ctx.encode(image).sha256, query)

        async def compute() -> list[Box]:
            if ctx.cache is not None:
                stored = ctx.cache.get(key)
                if stored is not None:
                    return [box_from_record(r) for r in stored]
            boxes = await asyncio.to_thread(detector.detect, image, query)
            if ctx.cache is not None:
                ctx.cache.set(key, [box_record(b) for b in boxes])
            return boxes

        return await run_once(ctx.memo, key, compute)


def _select_and_show(
    ctx: ToolContext, shown: dict[str, Image.Image], detected: dict[str, list[Box]]
) -> tuple[dict[str, list[Box]], dict[str, float], dict[str, Image.Image]]:
    """Select the boxes to highlight, highlight them and encode the results for the judge
    (in a worker thread: the pixel work never holds up the event loop)."""
    found = {role: select_boxes(boxes, ctx.config.grounding) for role, boxes in detected.items()}
    covered = {role: coverage(shown[role], boxes) for role, boxes in found.items() if boxes}
    keep_whole = ctx.config.highlight_large_boxes == "undimmed"
    images: dict[str, Image.Image] = {}
    for role, boxes in found.items():
        if not boxes or (keep_whole and covered[role] >= NEARLY_WHOLE_IMAGE):
            continue
        rgb = to_rgb(shown[role])
        spans = pixel_spans(rgb.width, rgb.height, boxes)
        if spans:
            images[role] = Image.fromarray(highlight_pixels(np.asarray(rgb), spans))
            ctx.encode(images[role])
    return found, covered, images


def _without_grounding(config: EvalConfig) -> str:
    """The advice to offer the other tools, naming them."""
    offered = config.tools if config.tools is not None else tool_names(config.method)
    others = [t for t in offered if normalize_name(t) != normalize_name("Grounding")]
    tools = in_callers_words(f"--tools '{','.join(others)}'", f"tools={json.dumps(others)}")
    return f"offer the agent tools without Grounding: {tools}"


def default_query(ctx: ToolContext) -> str | None:
    """The Grounding query of a sub-question.

    ``grounding.queries="official"``: the official code's query of the sub-question
    (``official_query``, else ``default_query``, else its condition text); the planner's is
    not used. ``planner``: the planner's, else the sub-question's default, else its
    condition text.
    """
    question = ctx.question
    if ctx.config.grounding.queries == "official":
        if question.official_query is not None:
            query = question.official_query(ctx.sample)
            if query:
                return query
    elif ctx.query:
        return ctx.query
    if question.default_query is not None:
        query = question.default_query(ctx.sample)
        if query:
            return query
    return question.condition_text(ctx.sample)


def _describe(
    query: str, found: dict[str, list[Box]], covered: dict[str, float], dimmed: set[str]
) -> str:
    lines = [f"Grounding of {query!r}:"]
    for role, boxes in found.items():
        if not boxes:
            lines.append(f"- {role} image: not found.")
            continue
        listed = "; ".join(
            f"{b.label or 'object'} ({b.score:.2f}) at {fmt_box(b)}"
            if b.score is not None
            else f"{b.label or 'object'} at {fmt_box(b)}"
            for b in boxes
        )
        lines.append(f"- {role} image: {len(boxes)} found, as [x0, y0, x1, y1] pixels: {listed}.")
    whole = [role for role in covered if role not in dimmed]
    for role in whole:
        lines.append(
            f"The found regions cover {percent(covered[role])} of the {role} image, nearly all "
            "of it, so it is shown undimmed."
        )
    lines.append(highlight_note(bool(dimmed), "found regions"))
    return "\n".join(lines)
