"""The tools' own settings, nested in :class:`cigeval.EvalConfig` as ``grounding``,
``difference`` and ``zoom``; each field names its command-line flag.

Grounding's and Difference's settings have a ``preset``: ``cigeval`` (the defaults below,
the ``extended`` method's) or ``official``, the values of the official CIGEval code
(HITsz-TMG/Agentic-CIGEval, ``tools/grding.py``, ``tools/diff.py`` and ``evaluate.py``), the
``paper`` method's. A preset fills in every field that is not given explicitly, so
``--difference-preset official --diff-threshold 40`` is the official Difference with another
threshold. Inside an :class:`~cigeval.EvalConfig` the method (``--method``) chooses the preset
when none is given.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ModelWrapValidatorHandler, model_validator

from cigeval._flag import flag

#: Grounding as the official code runs it: box and text thresholds 0.2, integer boxes of which
#: those holding a smaller detection are dropped before the best box per phrase is kept, and
#: the query of each sub-question fixed by the code (the planner names none).
OFFICIAL_GROUNDING: dict[str, Any] = {
    "box_threshold": 0.2,
    "text_threshold": 0.2,
    "boxes": "best_per_phrase",
    "queries": "official",
    "query_form": "as_given",
}

#: Difference as the official code runs it ("MaskFocus"): 5x5 blur, grayscale difference
#: above 45, one 3x3 dilation, contour boxes larger than 0.5% of the image, its one merge
#: pass, only the largest box; the mask is not used.
OFFICIAL_DIFFERENCE: dict[str, Any] = {
    "blur_kernel": 5,
    "measure": "gray",
    "threshold": 45,
    "dilation": 3,
    "min_area_fraction": 0.005,
    "area_of": "box",
    "max_regions": 1,
    "steps": "official",
    "mask": "ignore",
}

Preset = Literal["cigeval", "official"]


class _PresetConfig(BaseModel):
    """A tool's settings, whose ``preset`` (``official``: :attr:`_official`'s values) fills
    in the fields not given.

    The model's ``model_fields_set`` keeps only the fields the caller gave, so a settings
    object dumped with ``exclude_unset=True`` and validated again (under another method, say)
    gets that method's preset, not this one's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    _official: ClassVar[dict[str, Any]] = {}

    @model_validator(mode="wrap")
    @classmethod
    def _preset(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        filled = {**cls._official, **data} if data.get("preset") == "official" else data
        model = handler(filled)
        object.__setattr__(model, "__pydantic_fields_set__", set(data) & set(cls.model_fields))
        return model


class GroundingConfig(_PresetConfig):
    """GroundingDINO settings (transformers' zero-shot object detection)."""

    _official = OFFICIAL_GROUNDING

    preset: Preset = Field(
        "cigeval",
        description="defaults for the fields not given: cigeval, or official (the official "
        "code's thresholds 0.2/0.2, best box per phrase, its queries)",
        json_schema_extra=flag("--grounding-preset", by_method=True),
    )
    checkpoint: str = Field(
        "IDEA-Research/grounding-dino-tiny",
        description="GroundingDINO hub id or local folder",
        json_schema_extra=flag("--grounding-checkpoint"),
    )
    box_threshold: float = Field(
        0.35,
        ge=0,
        le=1,
        description="minimum box confidence (official: 0.2)",
        json_schema_extra=flag("--box-threshold", by_method=True),
    )
    text_threshold: float = Field(
        0.25,
        ge=0,
        le=1,
        description="minimum phrase confidence (official: 0.2)",
        json_schema_extra=flag("--text-threshold", by_method=True),
    )
    boxes: Literal["all", "best_per_phrase"] = Field(
        "all",
        description="highlight every box found, or (as the official code) drop boxes that hold "
        "a smaller detection and keep the best box per phrase",
        json_schema_extra=flag("--grounding-boxes", by_method=True),
    )
    queries: Literal["official", "planner"] = Field(
        "planner",
        description="what Grounding looks for: official (the official code's query of each "
        "sub-question: the whole prompt or instruction, the subject or concept name, or "
        "'background'; the planner is not asked for one), or planner (a short noun phrase "
        "the planner writes, else the sub-question's default query)",
        json_schema_extra=flag("--grounding-queries", by_method=True),
    )
    query_form: Literal["as_given", "phrases"] = Field(
        "phrases",
        description="how the query reaches the detector: as_given (lower-cased, ending with "
        "a period, as the official code passes it) or phrases (split on commas, semicolons "
        "and periods into phrases, each ending with a period)",
        json_schema_extra=flag("--grounding-query-form", by_method=True),
    )
    device: str | None = Field(
        None,
        description="torch device of the detector (default: cuda if available)",
        json_schema_extra=flag("--grounding-device"),
    )


class DifferenceConfig(_PresetConfig):
    """Pixel-difference settings."""

    _official = OFFICIAL_DIFFERENCE

    preset: Preset = Field(
        "cigeval",
        description="defaults for the fields not given: cigeval, or official (blur 5, "
        "grayscale threshold 45, dilation 3, contour boxes over 0.5 percent of the image, "
        "the official merge pass, the largest only, no mask)",
        json_schema_extra=flag("--difference-preset", by_method=True),
    )
    blur_kernel: int = Field(
        5,
        ge=1,
        description="Gaussian blur size before differencing (odd)",
        json_schema_extra=flag("--diff-blur"),
    )
    measure: Literal["max_channel", "gray"] = Field(
        "max_channel",
        description="per-pixel change: the largest channel difference, or the grayscale of "
        "the difference (official code; a change in blue alone counts 0.11 of its size)",
        json_schema_extra=flag("--diff-measure", by_method=True),
    )
    threshold: int = Field(
        30,
        ge=0,
        le=255,
        description="per-pixel change threshold, 0-255 (official: 45)",
        json_schema_extra=flag("--diff-threshold", by_method=True),
    )
    dilation: int = Field(
        7,
        ge=0,
        description="dilation kernel size joining nearby changes (official: 3)",
        json_schema_extra=flag("--diff-dilation", by_method=True),
    )
    min_area_fraction: float = Field(
        0.0005,
        ge=0,
        le=1,
        description="regions smaller than this fraction of the image are noise (official: 0.005)",
        json_schema_extra=flag("--diff-min-area", by_method=True),
    )
    area_of: Literal["pixels", "box"] = Field(
        "pixels",
        description="what `min_area_fraction` measures: a region's changed pixels, or its "
        "bounding box (official code)",
        json_schema_extra=flag("--diff-area-of", by_method=True),
    )
    max_regions: int = Field(
        20,
        ge=1,
        description="changed regions reported at most, the largest first (official: 1)",
        json_schema_extra=flag("--diff-max-regions", by_method=True),
    )
    steps: Literal["official", "cigeval"] = Field(
        "cigeval",
        description="how changed pixels become boxes: official (the official code: bounding "
        "boxes of every contour of the dilated change map, its single merge pass with its "
        "quirks, a second image of another size resized bilinearly and highlighted with the "
        "first image's box), or cigeval (connected components boxed on the changed pixels, "
        "merged until no two touch, boxes mapped to each image's own pixels)",
        json_schema_extra=flag("--diff-steps", by_method=True),
    )
    robust: bool = Field(
        False,
        description="compare as noise-robust: undo a small shift, match the global tone, "
        "measure the change by structure (SSIM) rather than pixel values, set the thresholds "
        "from the image's own noise and say when the whole image changed, so an editor's "
        "re-rendering (JPEG, tone, a pixel of drift, softened texture) is not reported as "
        "changes (`threshold`, `blur_kernel` and `measure` are not used; needs the "
        "'robust' extra, scikit-image)",
        json_schema_extra=flag("--diff-robust"),
    )
    mask: Literal["ignore", "split"] = Field(
        "split",
        description="the sample's edit mask: ignore it (official code), or split the changes "
        "into those inside and those outside it",
        json_schema_extra=flag("--diff-mask", by_method=True),
    )


class ZoomConfig(BaseModel):
    """How the Zoom tool crops and enlarges the region that matters (``extended``'s tool; the
    paper has none, so there is no official preset)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    context: float = Field(
        0.25,
        ge=0,
        le=4,
        description="context kept around a region on each side, as a share of its longer side",
        json_schema_extra=flag("--zoom-context"),
    )
    max_zoom: float = Field(
        8.0,
        ge=1,
        description="largest enlargement: a crop is at least this fraction (1/max_zoom) of "
        "the image's sides, so a tiny region keeps some surroundings",
        json_schema_extra=flag("--zoom-max"),
    )
    max_crops: int = Field(
        3,
        ge=1,
        description="separate regions enlarged at most (the largest first; each is cropped "
        "from every image the sub-question shows)",
        json_schema_extra=flag("--zoom-max-crops"),
    )
    size: int | None = Field(
        None,
        ge=32,
        description="longest side of each enlarged crop in pixels (default: the image's own "
        "size, the size the judge is shown the whole image at)",
        json_schema_extra=flag("--zoom-size", metavar="PX"),
    )
