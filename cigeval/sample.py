"""The input of an evaluation: one generated or edited image and its conditions."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cigeval._regular_file import open_regular
from cigeval._unicode import safe_strings, safe_text
from cigeval.errors import ConfigError, InputError
from cigeval.images import MAX_FILE_BYTES, ImageConversion, LoadedImage, load_image
from cigeval.tasks.registry import TASKS, get_task
from cigeval.tasks.spec import side_by_side_subjects

#: An image given by path (relative paths resolve against the sample's ``base_dir``),
#: directly as a PIL image from Python code, or as the bytes of an image file (a Hugging Face
#: dataset's image column; sent unchanged when they are an RGB PNG or JPEG).
ImageLike = str | Path | Image.Image | bytes


class SampleImages(BaseModel):
    """The images of a sample, by role. Which roles a task needs is in its TaskSpec.

    Roles other than the fields below are accepted only when the sample's task declares them
    (user tasks may have image roles of their own).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="allow")

    output: ImageLike | None = Field(None, description="The generated or edited image to judge.")
    source: ImageLike | None = Field(None, description="The image that was edited.")
    mask: ImageLike | None = Field(None, description="Binary mask of the region to edit.")
    subject: ImageLike | None = Field(
        None, description="Subject reference image (or both concepts side by side)."
    )
    subjects: list[ImageLike] | None = Field(
        None, description="Two concept reference images (multi_concept_ic)."
    )
    control: ImageLike | None = Field(
        None, description="Control image: canny, hed, depth, openpose, grayscale..."
    )
    ground_truth: ImageLike | None = Field(
        None, description="Reference edit, for the reference-based factor rubrics."
    )
    outputs: list[ImageLike] | None = Field(
        None, description="Several edited images judged together (lmm_score rubric)."
    )

    def provided(self) -> dict[str, Any]:
        """The roles that are set, as a dict."""
        extra = self.__pydantic_extra__ or {}
        return {k: v for k, v in {**self.__dict__, **extra}.items() if v is not None}

    def extra_roles(self) -> list[str]:
        """Roles beyond the built-in ones (declared by a user task)."""
        return list(self.__pydantic_extra__ or {})


class Sample(BaseModel):
    """One evaluation input, as read from a JSONL line or built in Python.

    Text fields are optional in the model; the task decides which are required (see
    :func:`cigeval.tasks.get_task` and :meth:`TaskSpec.validate_sample`). Text fields other
    than the ones below are accepted only when the sample's task declares them.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="allow")

    id: str = Field(description="Unique identifier of the sample within a run.")
    task: str = Field(description="A registered task id, e.g. 'text_guided_ie'.")
    prompt: str | None = None
    instruction: str | None = None
    subject: str | None = Field(None, description="Name of the subject, e.g. 'dog'.")
    concepts: list[str] | None = Field(None, description="Names of the two concepts.")
    control_type: str | None = Field(None, description="canny, hed, depth, openpose, ...")
    task_indicator: str | None = Field(
        None, description="Free-text edit category, e.g. 'Background Change' (lmm_score)."
    )
    images: SampleImages = Field(default_factory=SampleImages)
    candidates: dict[str, ImageLike] | None = Field(
        None,
        description="Several outputs made for this one condition, by label (e.g. {'A': path, "
        "'B': path}); judged against each other by the rubrics pairwise and pointwise.",
    )
    model: str | None = Field(None, description="Which generator made the image (passed through).")
    human: Any = Field(None, description="A human rating, passed through to the result.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Passed through.")
    base_dir: Path | None = Field(
        None, exclude=True, description="Directory relative image paths resolve against."
    )

    @field_validator("id", mode="before")
    @classmethod
    def _string_id(cls, value: Any) -> Any:
        if not isinstance(value, str):
            # By type, never by string form: true would otherwise be "True", 7 the same
            # sample as "7".
            raise ValueError(
                f"id must be a string (in quotes), got {_json_kind(value)} {_shown(value)}"
            )
        reserved = next((p for p in RESERVED_ID_PREFIXES if value.startswith(p)), None)
        if reserved is not None:
            raise ValueError(
                f"id {_shown(value)} starts with {reserved!r}, which is kept for the "
                "records of lines and dataset rows that hold no sample; choose another id"
            )
        return safe_text(value)

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        try:
            return TASKS.canonical(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _declared_extras(self) -> Sample:
        extra_fields = list(self.__pydantic_extra__ or {})
        extra_roles = self.images.extra_roles()
        if not extra_fields and not extra_roles:
            return self
        get_task(self.task).check_declared(self, extra_fields, extra_roles, _OTHER_FIELDS)
        not_text = [f for f in extra_fields if not isinstance(getattr(self, f), str | None)]
        if not_text:
            raise ValueError(f"text field(s) {', '.join(not_text)} must be strings")
        return self

    @model_validator(mode="after")
    def _valid_candidates(self) -> Sample:
        if self.candidates is None:
            return self
        problems = candidate_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def text_fields(self) -> dict[str, str]:
        """Every text condition of the sample that is set, by field name."""
        names = ["prompt", "instruction", "subject", "control_type", "task_indicator"]
        names += list(self.__pydantic_extra__ or {})
        texts = {n: str(getattr(self, n)) for n in names if getattr(self, n, None)}
        if self.concepts:
            texts["concepts"] = ", ".join(self.concepts)
        return texts

    def passthrough(self) -> dict[str, Any]:
        """Fields copied into the result record: ``model``, ``human``, ``metadata`` verbatim,
        and ``conditions`` (the text conditions, :meth:`text_fields`) so a report can show
        what each output was asked to be."""
        out: dict[str, Any] = {}
        if self.model is not None:
            out["model"] = self.model
        if self.human is not None:
            out["human"] = self.human
        if self.metadata:
            out["metadata"] = self.metadata
        conditions = self.text_fields()
        if conditions:
            out["conditions"] = conditions
        return out


#: The ids of records about lines that hold no sample (``@line:7``) start with this, which
#: no sample id may: an error record can never take a valid sample's id.
ERROR_ID_PREFIX = "@line:"
#: The same for the rows of a dataset (``@row:7``, counted from 0 as the dataset does).
ROW_ERROR_ID_PREFIX = "@row:"
#: The prefixes no sample id may start with.
RESERVED_ID_PREFIXES = (ERROR_ID_PREFIX, ROW_ERROR_ID_PREFIX)


def line_error_id(line_number: int, prefix: str = ERROR_ID_PREFIX) -> str:
    """The id of the error record of samples line ``line_number`` (or of a dataset row, with
    ``prefix`` :data:`ROW_ERROR_ID_PREFIX`) when it names no usable id."""
    return f"{prefix}{line_number}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else type(value).__name__


def _shown(value: Any) -> str:
    """A short JSON-like rendering of a value for a message."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: The most candidates one sample may hold.
MAX_CANDIDATES = 8


def candidate_problems(sample: Sample) -> list[str]:
    """What is wrong with a sample's ``candidates`` (and the human label that ranks them)."""
    from cigeval.ranking import RESERVED_CHARACTERS, TIE_KINDS, parse_ranking

    candidates = sample.candidates or {}
    problems: list[str] = []
    if not 2 <= len(candidates) <= MAX_CANDIDATES:
        problems.append(
            f"candidates must hold 2 to {MAX_CANDIDATES} images by label, got {len(candidates)}"
        )
    for label in candidates:
        if not label or label != label.strip():
            problems.append(f"candidate label {label!r} is empty or has surrounding spaces")
        elif any(c in label for c in RESERVED_CHARACTERS) or label.lower() in TIE_KINDS:
            problems.append(
                f"candidate label {label!r} is reserved or holds one of "
                f"{' '.join(RESERVED_CHARACTERS)} (they write rankings)"
            )
    provided = sample.images.provided()
    if "output" in provided or "outputs" in provided:
        problems.append(
            "a sample with candidates has no images.output or images.outputs: the candidates "
            "are the outputs"
        )
    if not problems and isinstance(sample.human, str | list):
        try:
            parse_ranking(sample.human, list(candidates))
        except ValueError as exc:
            problems.append(
                f"human: {exc} (a human label of candidates is a candidate label, 'tie', or a "
                "ranking such as 'B > A')"
            )
    return problems


#: Sample fields that are not text conditions, offered as corrections of a misspelling.
_OTHER_FIELDS = ("id", "task", "images", "candidates", "model", "human", "metadata")


def _problem(error: Any) -> str:
    """One pydantic error as a sentence: a validator's own message as it is (it names the
    field), a type or value error prefixed with where it is."""
    if error["type"] == "value_error" and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def sample_from_dict(data: dict[str, Any], base_dir: Path | None = None) -> Sample:
    """Validate a raw dict into a :class:`Sample`, with an error that names the sample."""
    raw_id = data.get("id") if isinstance(data, dict) else None
    sample_id = raw_id if isinstance(raw_id, str) else None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}")
    try:
        return Sample.model_validate({**data, "base_dir": base_dir})
    except ValidationError as exc:
        problems = "; ".join(_problem(err) for err in exc.errors())
        raise InputError(problems, sample_id=sample_id) from None


class SampleLine(BaseModel):
    """A line of a samples file: either a sample, or the error that stopped it being one."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    line_number: int
    sample: Sample | None = None
    #: What ``line_number`` counts: samples-file lines (``@line:N``) or dataset rows (``@row:N``).
    error_id_prefix: str = ERROR_ID_PREFIX
    raw: dict[str, Any] | None = None
    error: str | None = None

    @property
    def sample_id(self) -> str:
        """Best-known identifier: the sample id, the raw id when it is a string a sample may
        take, or ``@line:N`` / ``@row:N`` (:func:`line_error_id`, a namespace no sample id
        can enter)."""
        if self.sample is not None:
            return self.sample.id
        raw_id = self.raw.get("id") if self.raw is not None else None
        if isinstance(raw_id, str) and not raw_id.startswith(RESERVED_ID_PREFIXES):
            return safe_text(raw_id)
        return line_error_id(self.line_number, self.error_id_prefix)


def sample_identity(item: Any) -> tuple[str, str]:
    """The id and task of anything judged as a sample (a :class:`Sample`, a
    :class:`SampleLine` or a dict), ``"unknown"`` where it names none; never raises."""
    if isinstance(item, Sample):
        return item.id, item.task
    if isinstance(item, SampleLine):
        raw = item.raw or {}
        return item.sample_id, str(raw.get("task", "unknown"))
    if isinstance(item, dict):
        return str(item.get("id", "unknown")), str(item.get("task", "unknown"))
    return "unknown", "unknown"


#: A JSON escape of half a surrogate pair (``\\ud800``): the only way a valid UTF-8 line
#: can hold text that is not valid UTF-8 once decoded.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_BOM = b"\xef\xbb\xbf"


def _read_line(raw: bytes, number: int) -> Any:
    """The JSON value on one samples line; InputError naming the line when there is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"line {number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "save the samples file as UTF-8"
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"line {number}: invalid JSON ({exc})") from None
    except RecursionError:
        raise InputError(f"line {number}: invalid JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer longer than Python converts
        raise InputError(f"line {number}: invalid JSON ({str(exc)[:120]})") from None
    if _SURROGATE_ESCAPE.search(raw):
        try:
            value = safe_strings(value)
        except RecursionError:
            raise InputError(f"line {number}: invalid JSON (nested too deeply)") from None
    return value


def iter_samples_file(path: str | Path) -> Iterator[SampleLine]:
    """Read a samples JSONL lazily, one :class:`SampleLine` per non-blank line.

    Bad lines become a SampleLine with ``error`` set instead of stopping the run, whatever is
    wrong with them: bytes that are not UTF-8, invalid JSON, numbers too long to convert,
    nesting too deep, or a value that is not a valid sample. A UTF-8 byte order mark at the
    start of the file is skipped. Lone surrogates escaped in the JSON (``\\ud800``) become
    U+FFFD, so every id and text can be written back as UTF-8.
    """
    path = Path(path)
    base_dir = path.resolve().parent
    with open_regular(path) as handle:  # a FIFO or a device is refused, never waited on
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if not raw.strip():
                continue
            try:
                value = _read_line(raw, number)
            except InputError as exc:
                yield SampleLine(line_number=number, error=str(exc))
                continue
            yield sample_line(value, number, base_dir)


def sample_line(value: Any, line_number: int, base_dir: Path | None) -> SampleLine:
    """The :class:`SampleLine` of one parsed samples line: the sample, or the reason it is
    not one (never raises for a bad value)."""
    raw_dict = value if isinstance(value, dict) else None
    try:
        sample = sample_from_dict(value, base_dir=base_dir)
    except InputError as exc:
        return SampleLine(line_number=line_number, raw=raw_dict, error=str(exc))
    except (ValueError, TypeError, RecursionError) as exc:
        message = f"line {line_number}: not a valid sample ({type(exc).__name__}: {exc})"
        return SampleLine(line_number=line_number, raw=raw_dict, error=message[:500])
    return SampleLine(line_number=line_number, sample=sample, raw=raw_dict)


def split_side_by_side(image: Image.Image) -> tuple[Image.Image, Image.Image]:
    """The left and right halves of ``image``, cut where the official code cuts it: at
    half the width, rounded half to even (Pillow rounds the official ``w * 0.5`` box so; a
    width of 103 is cut at 52)."""
    middle = round(image.width * 0.5)
    if middle == 0:
        raise ValueError(f"an image {image.width} pixel(s) wide has no two halves")
    left = image.crop((0, 0, middle, image.height))
    right = image.crop((middle, 0, image.width, image.height))
    return left, right


def join_side_by_side(images: Sequence[Image.Image]) -> Image.Image:
    """RGB images joined left to right the way ImagenHub joins a multi-concept sample's
    references (the official code's ``util.merge_images``): each scaled (bicubic) to the
    images' average height, widths in proportion (truncated), with a 10-pixel band between
    two (1 black, 8 white, 1 black). The paper layout's planner is shown two concept images
    so, as its prompt describes them: one image joining two."""
    return join_one_by_one([image.size for image in images], lambda n: nullcontext(images[n]))


def join_one_by_one(
    sizes: Sequence[tuple[int, int]],
    pixels: Callable[[int], AbstractContextManager[Image.Image]],
) -> Image.Image:
    """:func:`join_side_by_side` of images of ``sizes`` (width, height), each asked for by
    its index (``pixels(n)``, a context) only when it is scaled into place, and let go before
    the next is asked for: one image's pixels at a time, not all of them."""
    height = sum(h for _, h in sizes) // len(sizes)
    widths = [int(w * height / h) for w, h in sizes]
    joined = Image.new("RGB", (sum(widths) + 10 * (len(sizes) - 1), height))
    left = 0
    for index, width in enumerate(widths):
        if index:
            joined.paste((255, 255, 255), (left + 1, 0, left + 9, height))
            left += 10  # the band's outer columns stay black
        with pixels(index) as image:
            scaled = image.resize((width, height), Image.Resampling.BICUBIC)
        joined.paste(scaled, (left, 0))
        scaled.close()
        left += width
    return joined


def candidate_role(label: str) -> str:
    """The image role of candidate ``label``: ``candidate:<label>``."""
    return f"candidate:{label}"


def image_inputs(sample: Sample) -> Iterator[tuple[str, Any]]:
    """Each image ``sample`` gives, as given (a path, bytes or a PIL image), by the name errors
    and records use: ``output``, ``subjects[1]``, ``candidates.A``."""
    for role, value in sample.images.provided().items():
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield f"{role}[{index}]", item
        else:
            yield role, value
    for label, value in (sample.candidates or {}).items():
        yield f"candidates.{label}", value


def load_sample_images(
    sample: Sample,
    conversion: ImageConversion = "rescale",
    *,
    max_bytes: int = MAX_FILE_BYTES,
    on_loaded: Callable[[str, LoadedImage], None] | None = None,
) -> dict[str, LoadedImage]:
    """Load every image of ``sample`` by role (``subjects`` become ``subject_1``/``subject_2``,
    ``outputs`` become ``output_1``..., candidates ``candidate:<label>``). A side-by-side
    ``subject`` image of a multi-concept sample is split at the middle: its left half is
    ``subject_1``, its right half ``subject_2`` (it stays available whole as ``subject``). A
    ``mask`` with transparency is read by its alpha channel (:func:`cigeval.images.mask_to_rgb`).
    Pixels are decoded when first needed (:class:`~cigeval.images.LoadedImage`); an image
    that is not 8-bit RGB is converted as ``conversion`` says (:func:`cigeval.images.load_image`).
    Raises InputError naming the image (a file that is no regular file, or holds more than
    ``max_bytes`` bytes, is refused before it is read). ``on_loaded(role, image)`` is called
    as each image file is loaded, before the next is read (to encode it and let its file's
    bytes go meanwhile).
    """
    loaded: dict[str, LoadedImage] = {}

    def load(value: Any, key: str, role: str) -> None:
        loaded[key] = image = load_image(
            value,
            role=role,
            sample_id=sample.id,
            base_dir=sample.base_dir,
            mask=role == "mask",
            max_bytes=max_bytes,
            conversion=conversion,
        )
        if on_loaded is not None:
            on_loaded(key, image)

    for role, value in sample.images.provided().items():
        if role == "subjects":
            for index, item in enumerate(value, start=1):
                load(item, f"subject_{index}", f"subjects[{index - 1}]")
        elif role == "outputs":
            for index, item in enumerate(value, start=1):
                load(item, f"output_{index}", f"outputs[{index - 1}]")
        else:
            load(value, role, role)
    for label, value in (sample.candidates or {}).items():
        load(value, candidate_role(label), f"candidates.{label}")
    if side_by_side_subjects(sample):
        try:
            halves = split_side_by_side(loaded["subject"].pixels())
        except ValueError as exc:
            raise InputError(f"images.subject (side by side): {exc}", sample.id) from None
        loaded["subject_1"], loaded["subject_2"] = (loaded["subject"].derived(h) for h in halves)
    if "mask" in loaded and "source" in loaded and loaded["mask"].size != loaded["source"].size:
        # A mask of another size is resized to the source, the only sensible conversion.
        resized = loaded["mask"].pixels().resize(loaded["source"].size, Image.Resampling.NEAREST)
        loaded["mask"] = loaded["mask"].derived(resized)
    return loaded


def file_hashes(images: Mapping[str, LoadedImage]) -> dict[str, str]:
    """The sha256 of the files (or bytes) ``images`` were read from, by the role the sample
    gives each (``output``, ``subjects[0]``, ``candidates.A``): what a run records."""
    return {image.role: image.sha256 for image in images.values() if image.sha256 is not None}
