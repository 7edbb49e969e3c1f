"""Grounding with a tiny randomly initialised GroundingDINO built offline in the test."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from cigeval.config import EvalConfig, GroundingConfig
from cigeval.errors import ConfigError, ToolError
from cigeval.tasks import SubQuestion
from cigeval.tools import Box, GroundingDinoDetector, GroundingTool, normalize_query
from cigeval.tools import grounding as grounding_module
from tests.tiny_grounding import build_tiny_grounding_dino

from .conftest import DictCache, MakeCtx


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("tiny_grounding_dino")
    build_tiny_grounding_dino(folder)
    yield str(folder)
    grounding_module.clear_detector_cache()


def _image(seed: int, size: tuple[int, int] = (96, 72)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _well_formed(boxes: list[Box], image: Image.Image) -> None:
    for box in boxes:
        assert 0 <= box.x0 < box.x1 <= image.width, box
        assert 0 <= box.y0 < box.y1 <= image.height, box
        assert box.score is not None and 0.0 <= box.score <= 1.0
        assert isinstance(box.label, str) and box.label
        assert "[SEP]" not in box.label and "[CLS]" not in box.label


def test_normalize_query() -> None:
    assert normalize_query("Red Car") == "red car."
    assert normalize_query("A dog, a CAT.") == "a dog. a cat."
    assert normalize_query("  dog ;  red   car\n") == "dog. red car."
    with pytest.raises(ToolError):
        normalize_query(" . , ")


def test_the_official_query_form_passes_the_text_as_given() -> None:
    # GroundingDINO lower-cases, strips and ends the official code's text with a period
    assert normalize_query("Add a red hat, and a scarf; please", "as_given") == (
        "add a red hat, and a scarf; please."
    )
    assert normalize_query(" A dog. ", "as_given") == "a dog."
    with pytest.raises(ToolError):
        normalize_query(" . ", "as_given")
    assert GroundingDinoDetector.from_config(EvalConfig().grounding).query_form == "as_given"
    assert EvalConfig(method="extended").grounding.query_form == "phrases"
    paper, extended = (
        GroundingDinoDetector(query_form=form).cache_key("sha", "a cat, a dog")
        for form in ("as_given", "phrases")
    )
    assert paper != extended  # the boxes found depend on the form


def test_detect_returns_boxes_inside_the_image(checkpoint: str) -> None:
    detector = GroundingDinoDetector(checkpoint, box_threshold=0.0, text_threshold=0.0)
    image = _image(0)
    boxes = detector.detect(image, "a dog")
    assert 0 < len(boxes) <= 10
    _well_formed(boxes, image)
    scores = [b.score or 0.0 for b in boxes]
    assert scores == sorted(scores, reverse=True)


def test_box_threshold_filters(checkpoint: str) -> None:
    image = _image(1)
    everything = GroundingDinoDetector(checkpoint, 0.0, 0.0, "cpu").detect(image, "red car")
    scores = sorted(b.score or 0.0 for b in everything)
    cut = scores[len(scores) // 2]
    kept = GroundingDinoDetector(checkpoint, cut, 0.0, "cpu").detect(image, "red car")
    assert len(kept) == sum(s > cut for s in scores) < len(everything)
    assert all((b.score or 0.0) > cut for b in kept)


def test_model_loads_once_across_threads(checkpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    grounding_module.clear_detector_cache()
    original = transformers.AutoModelForZeroShotObjectDetection.from_pretrained
    loads: list[str] = []

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(name)
        time.sleep(0.05)  # widen the window in which a racing thread would load again
        return original(name, *args, **kwargs)

    monkeypatch.setattr(
        transformers.AutoModelForZeroShotObjectDetection, "from_pretrained", counting
    )
    image = _image(2)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            GroundingDinoDetector(checkpoint, 0.0, 0.0, "cpu").detect(image, "cat")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert loads == [checkpoint]


def test_missing_checkpoint_fails_fast_with_advice(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    started = time.monotonic()
    detector = GroundingDinoDetector(str(tmp_path / "no_such_model"), device="cpu")
    # A setup error (ConfigError), never a per-sample tool failure that could fall back.
    with pytest.raises(ConfigError) as info:
        detector.detect(_image(3), "dog")
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert "no_such_model" in message and "local directory path" in message


def _config(checkpoint: str) -> EvalConfig:
    """The extended method (the planner's query, box lists) with a detector that keeps all."""
    return EvalConfig(
        method="extended",
        grounding=GroundingConfig(checkpoint=checkpoint, box_threshold=0.0, text_threshold=0.0),
    )


@pytest.fixture
def detect_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    calls: list[tuple[int, str]] = []
    original = GroundingDinoDetector.detect

    def counting(self: GroundingDinoDetector, image: Image.Image, query: str) -> list[Box]:
        calls.append((id(image), query))
        return original(self, image, query)

    monkeypatch.setattr(GroundingDinoDetector, "detect", counting)
    return calls


async def test_tool_grounds_default_query_and_highlights(
    checkpoint: str, make_ctx: MakeCtx, detect_calls: list[tuple[int, str]]
) -> None:
    subject, output = _image(4), _image(5, (80, 80))
    ctx = make_ctx(
        "subject_driven_ig",
        "subject_similarity",
        {"subject": subject, "output": output},
        config=_config(checkpoint),
        subject="dog",
        prompt="a dog on a car",
    )
    result = await GroundingTool().run(ctx)
    assert result.tool == "Grounding" and result.highlighted
    assert detect_calls == [(id(subject), "dog"), (id(output), "dog")]
    assert set(result.images) == set(result.boxes) == {"subject", "output"}
    assert "'dog'" in result.text and "highlighted" in result.text
    for role, image in (("subject", subject), ("output", output)):
        boxes = result.boxes[role]
        _well_formed(boxes, image)
        shown, original = np.asarray(result.images[role]), np.asarray(image)
        inside = np.zeros(original.shape[:2], bool)
        for b in boxes:
            inside[int(b.y0) : int(np.ceil(b.y1)), int(b.x0) : int(np.ceil(b.x1))] = True
        assert np.array_equal(shown[inside], original[inside])
        assert np.array_equal(shown[~inside], original[~inside] // 4)


async def test_cache_and_memo_prevent_a_second_detection(
    checkpoint: str, make_ctx: MakeCtx, detect_calls: list[tuple[int, str]]
) -> None:
    source, output = _image(6), _image(7)
    images = {"source": source, "output": output}
    cache = DictCache()
    memo: dict[str, Any] = {}

    def ctx(question: str, memo: dict[str, Any], query: str = "red car") -> Any:
        return make_ctx(
            "text_guided_ie",
            question,
            images,
            query=query,
            memo=memo,
            cache=cache,
            config=_config(checkpoint),
            instruction="make the car red",
        )

    # Two sub-questions of one sample at once: one detection per distinct image.
    first, second = await asyncio.gather(
        GroundingTool().run(ctx("edit_success", memo)),
        GroundingTool().run(ctx("over_editing", memo)),
    )
    assert len(detect_calls) == 2 and cache.sets == 2
    assert first.boxes == second.boxes
    # Another sample (fresh memo) with the same images and query: answered from the cache.
    again = await GroundingTool().run(ctx("edit_success", {}))
    assert len(detect_calls) == 2
    cached = [v for b in again.boxes["output"] for v in b.as_list()]
    fresh = [v for b in first.boxes["output"] for v in b.as_list()]
    assert cached == pytest.approx(fresh, abs=0.01)
    assert [b.label for b in again.boxes["output"]] == [b.label for b in first.boxes["output"]]
    # A different query is a different key.
    await GroundingTool().run(ctx("edit_success", {}, query="cat"))
    assert len(detect_calls) == 4


async def test_thresholds_are_part_of_the_cache_key(checkpoint: str) -> None:
    a = GroundingDinoDetector(checkpoint, 0.3, 0.25)
    b = GroundingDinoDetector(checkpoint, 0.4, 0.25)
    assert a.cache_key("abc", "dog") != b.cache_key("abc", "dog")
    assert a.cache_key("abc", "Dog") == a.cache_key("abc", "dog.")


async def test_tool_without_query_highlights_nothing(
    make_ctx: MakeCtx, detect_calls: list[tuple[int, str]]
) -> None:
    images = {"source": _image(8), "output": _image(9)}
    ctx = make_ctx("text_guided_ie", "edit_success", images, instruction="remove the cat")
    # A sub-question of one's own with no default query and no condition: nothing to find.
    ctx.question = SubQuestion(
        id="kept", question="Is it kept?", image_roles=("source", "output"), rules="Rate it."
    )
    result = await GroundingTool().run(ctx)
    assert not result.highlighted and result.images == {} and detect_calls == []
    assert "none was given" in result.text


async def test_tool_with_nothing_found(
    checkpoint: str, make_ctx: MakeCtx, detect_calls: list[tuple[int, str]]
) -> None:
    config = EvalConfig(
        method="extended", grounding=GroundingConfig(checkpoint=checkpoint, box_threshold=1.0)
    )
    ctx = make_ctx(
        "text_guided_ig",
        "prompt_following",
        {"output": _image(10)},
        query="cat",
        config=config,
        prompt="a cat",
    )
    result = await GroundingTool().run(ctx)
    assert len(detect_calls) == 1
    assert not result.highlighted and result.images == {}
    assert "not found" in result.text and "Nothing is highlighted" in result.text


def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from cigeval.errors import MissingDependency

    monkeypatch.setitem(sys.modules, "transformers", None)  # makes the import fail
    detector = GroundingDinoDetector("some/checkpoint-not-loaded-yet", device="cpu")
    with pytest.raises(MissingDependency, match=r"cigeval\[grounding\]"):
        detector.detect(_image(11), "dog")


def test_best_per_phrase_drops_boxes_holding_a_detection_and_keeps_one_per_phrase() -> None:
    from cigeval.tools import best_per_phrase

    small = Box(10, 10, 20, 20, label="cat", score=0.4)
    around = Box(0, 0, 50, 50, label="cat", score=0.9)  # holds the small one: dropped
    other_cat = Box(60, 60, 80, 80, label="cat", score=0.6)
    hat = Box(30, 0, 45, 8, label="hat", score=0.3)
    kept = best_per_phrase([small, around, other_cat, hat])
    assert kept == [other_cat, hat]  # best cat (0.6 beats 0.4), then the hat; best first


def test_official_grounding_preset() -> None:
    official = GroundingConfig(preset="official")
    assert (official.box_threshold, official.text_threshold) == (0.2, 0.2)
    assert official.boxes == "best_per_phrase"
    assert GroundingConfig(preset="official", box_threshold=0.3).box_threshold == 0.3
    assert (GroundingConfig().box_threshold, GroundingConfig().boxes) == (0.35, "all")


class _FixedDetector:
    """Finds the given boxes (as fractions of the image) whatever the query."""

    def __init__(self, *fractions: tuple[float, float, float, float]) -> None:
        self.fractions = fractions

    def cache_key(self, image_sha256: str, query: str) -> str:
        return f"fixed:{self.fractions}:{image_sha256}:{query}"

    def detect(self, image: Image.Image, query: str) -> list[Box]:
        w, h = image.width, image.height
        return [
            Box(a * w, b * h, c * w, d * h, label=f"thing{i}", score=0.5)
            for i, (a, b, c, d) in enumerate(self.fractions)
        ]


async def test_boxes_covering_nearly_the_whole_image_are_not_dimmed(make_ctx: MakeCtx) -> None:
    images = {"source": _image(12), "output": _image(13)}
    ctx = make_ctx("subject_driven_ie", "background_preservation", images, subject="dog")
    whole = await GroundingTool(_FixedDetector((0, 0, 1, 0.95))).run(ctx)  # type: ignore[arg-type]
    assert not whole.highlighted and whole.images == {}
    assert "nearly all" in whole.text and "Nothing is highlighted" in whole.text
    assert whole.data["query"] == "background"
    part = await GroundingTool(_FixedDetector((0, 0, 0.5, 0.5))).run(ctx)  # type: ignore[arg-type]
    assert part.highlighted and set(part.images) == {"source", "output"}


async def test_official_boxes_setting_applies_to_the_tool(make_ctx: MakeCtx) -> None:
    images = {"output": _image(14)}
    nested = _FixedDetector((0.1, 0.1, 0.2, 0.2), (0, 0, 0.5, 0.5))
    config = EvalConfig(grounding=GroundingConfig(preset="official"))
    ctx = make_ctx("text_guided_ig", "prompt_following", images, prompt="a cat", config=config)
    result = await GroundingTool(nested).run(ctx)  # type: ignore[arg-type]
    assert [b.label for b in result.boxes["output"]] == ["thing0"]  # the box around it dropped


def test_only_a_box_strictly_containing_a_kept_one_is_dropped() -> None:
    from cigeval.tools import best_per_phrase

    inner = Box(10, 10, 20, 20, label="cup", score=0.3)
    sharing_an_edge = Box(10, 5, 30, 30, label="cup", score=0.8)  # not strictly around it
    strictly_around = Box(5, 5, 40, 40, label="cup", score=0.9)
    assert best_per_phrase([inner, sharing_an_edge, strictly_around]) == [sharing_an_edge]


async def test_the_paper_method_grounds_as_the_official_code(make_ctx: MakeCtx) -> None:
    subject, output = _image(15), _image(16)
    # a fractional box, and one covering 96% of the image
    detector = _FixedDetector((0.105, 0.11, 0.507, 0.52), (0, 0, 1, 0.96))
    ctx = make_ctx(
        "subject_driven_ig",
        "subject_similarity",
        {"subject": subject, "output": output},
        config=EvalConfig(),  # the paper method
        query="dog",  # a planner's query: not used
        subject="dog",
        prompt="a dog on a car",
    )
    result = await GroundingTool(detector).run(ctx)  # type: ignore[arg-type]
    assert result.data["query"] == "a dog on a car"  # the whole prompt, in both images
    assert result.text == "Look closely at the highlighted parts of the image(s)."
    for role, image in (("subject", subject), ("output", output)):
        # the detector's boxes cut to whole pixels; the small one does not hold the big one,
        # the big one holds it strictly: dropped; the best box of each phrase stays
        (box,) = result.boxes[role]
        w, h = image.size
        assert box.as_list() == [int(0.105 * w), int(0.11 * h), int(0.507 * w), int(0.52 * h)]
        shown, original = np.asarray(result.images[role]), np.asarray(image)
        x0, y0, x1, y1 = (int(v) for v in box.as_list())
        expected = original // 4
        expected[y0:y1, x0:x1] = original[y0:y1, x0:x1]
        assert np.array_equal(shown, expected), role


async def test_the_paper_method_dims_around_boxes_covering_nearly_everything(
    make_ctx: MakeCtx,
) -> None:
    images = {"source": _image(17), "output": _image(18)}
    config = EvalConfig()
    ctx = make_ctx("subject_driven_ie", "background_preservation", images, config=config)
    result = await GroundingTool(_FixedDetector((0, 0, 1, 0.95))).run(ctx)  # type: ignore[arg-type]
    assert result.highlighted and set(result.images) == {"source", "output"}
    shown, original = np.asarray(result.images["source"]), np.asarray(images["source"])
    cut = int(0.95 * original.shape[0])
    assert np.array_equal(shown[:cut], original[:cut])
    assert np.array_equal(shown[cut:], original[cut:] // 4)
    # nothing found: the same sentence, the images unchanged (as the official code)
    empty = await GroundingTool(_FixedDetector()).run(ctx)  # type: ignore[arg-type]
    assert empty.text == result.text and empty.images == {} and not empty.highlighted
