"""The result of evaluating one sample."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from cigeval.trace import Trace


class Evidence(BaseModel):
    """One region a tool pointed the judge at, in the pixels of the image it was found in.

    ``box`` is ``[x0, y0, x1, y1]`` (end exclusive, like the tools' boxes) in the coordinates
    of the image ``role`` names (the sample's ``source``, ``output``, ... as the record's
    ``input_images`` lists them), whose size was ``image_size`` (``[width, height]``): never
    in the coordinates of a copy a tool resized. ``tool`` found it, in round ``round`` of the
    sub-question; ``label`` says what it is (a detector's phrase, ``changed``, ``changed
    outside mask``, ``zoomed region``); ``confidence`` is a detector's score, when it gave one.
    """

    model_config = ConfigDict(extra="forbid")

    box: tuple[float, float, float, float] = Field(
        description="[x0, y0, x1, y1] in the pixels of the image `role` names."
    )
    label: str = Field(description="What the region is, in the tool's words.")
    tool: str = Field(description="The tool that found the region.")
    role: str = Field(description="The image role the box belongs to, e.g. 'output'.")
    image_size: tuple[int, int] | None = Field(
        None, description="[width, height] of that image: the frame of `box`."
    )
    round: int = Field(1, description="The sub-question's round whose tool found it.")
    confidence: float | None = Field(None, description="The detector's score, if any.")

    @field_validator("box")
    @classmethod
    def _ordered(cls, box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
        x0, y0, x1, y1 = box
        if not (x0 <= x1 and y0 <= y1):
            raise ValueError(f"a box is [x0, y0, x1, y1] with x0 <= x1 and y0 <= y1, not {box}")
        return box


class ToolStep(BaseModel):
    """One tool run of a sub-question: which tool, on what query, and what it returned."""

    model_config = ConfigDict(extra="forbid")

    round: int = Field(description="The thought/action/observation round (1 = the planned tool).")
    tool: str
    query: str | None = None
    output: str | None = Field(None, description="The observation shown to the judge.")
    thought: str = Field("", description="Why the tool was asked for.")
    error: str | None = Field(None, description="Why the tool failed (then nothing was shown).")
    image_ids: dict[str, str] = Field(
        default_factory=dict, description="The tool's images shown to the judge: role -> sha256."
    )


class SubScore(BaseModel):
    """The judgement of one sub-question.

    ``tool``, ``tool_query`` and ``tool_output`` describe the last tool whose output the judge
    saw (None when it judged without one); ``tool_steps`` lists every tool run, in order.
    """

    model_config = ConfigDict(extra="forbid")

    question_id: str = Field(description="Stable id of the sub-question, e.g. 'edit_success'.")
    question: str = Field(description="The sub-question in words.")
    score: float | None = Field(
        description="On the ``scale`` (0-10 unless a rubric says otherwise); None when it failed."
    )
    scale: tuple[float, float] = Field((0, 10), description="Lowest and highest possible score.")
    reasoning: str = ""
    tool: str | None = Field(None, description="Tool used (the last one), or None.")
    tool_query: str | None = None
    tool_output: str | None = Field(None, description="The observation shown to the judge.")
    tool_steps: list[ToolStep] = Field(
        default_factory=list, description="Every tool run of the sub-question, in order."
    )
    note: str | None = Field(
        None,
        description="How the judging departed from the plan, e.g. a tool that was unknown or "
        "failed, so the sub-question was judged without it.",
    )
    degraded: bool = Field(
        False,
        description="True when the sub-question was judged without the tool the plan chose "
        "(the plan could not be used, the tool failed, or the tool is not allowed for the "
        "task); ``note`` says why.",
    )
    error: str | None = None
    judgments: list[float] | None = Field(
        None, description="Individual scores when several judges were combined."
    )
    tool_image_ids: dict[str, str] = Field(
        default_factory=dict,
        description="The tool's images shown to the judge, by role, as sha256 (see "
        "Score.image_files for where they are).",
    )
    evidence: list[Evidence] = Field(
        default_factory=list,
        description="Every region the sub-question's tools found, each in the pixels of the "
        "image it belongs to (empty when no tool ran or none found a region).",
    )
    _tool_images: dict[str, Image.Image] = PrivateAttr(default_factory=dict)

    @property
    def tool_images(self) -> dict[str, Image.Image]:
        """Images produced by the tool (e.g. highlighted regions), by role. Not serialised."""
        return self._tool_images


class Verdict(BaseModel):
    """What a rubric concludes about one sample: the numbers, or why there are none.

    Rubrics return a Verdict; the evaluator turns it into a :class:`Score` by adding the
    sample's identity, the trace, the usage and the settings (in one place,
    :func:`cigeval.evaluation.assemble_score`). ``error`` set means the sample failed:
    ``value`` is then None, while ``sub_scores`` may still show what was judged.
    """

    model_config = ConfigDict(extra="forbid")

    value: float | None = None
    sub_scores: list[SubScore] = Field(default_factory=list)
    dimensions: dict[str, float | None] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    spread: dict[str, float] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the rubric reached a score."""
        return self.error is None and self.value is not None

    @property
    def status(self) -> Literal["ok", "error"]:
        """``ok`` or ``error``, as the Score made from this verdict will say."""
        return "ok" if self.ok else "error"

    @classmethod
    def failure(cls, error: str | BaseException, **fields: Any) -> Verdict:
        """A failed verdict; an exception becomes ``"<ExceptionType>: <message>"``."""
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        return cls(error=error, **fields)


class Score(BaseModel):
    """Everything known about one sample's evaluation.

    ``value`` is in [0, 1] (the aggregate of the sub-scores divided by 10) or None when the
    sample ended in ``error``. ``trace`` holds every model call, thought, action and
    observation; ``config`` the settings that produced it.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    task: str
    rubric: str = "cigeval"
    status: Literal["ok", "error"]
    value: float | None = None
    sub_scores: list[SubScore] = Field(default_factory=list)
    error: str | None = None
    error_kind: str | None = Field(
        None,
        description="What kind of failure ended the sample in error, where it is known: "
        "'transport.connection' (refused or reset), 'transport.timeout', "
        "'transport.server_error' (HTTP 5xx) or 'transport.rate_limited' (HTTP 429 to every "
        "attempt) when a model call could not reach the server or was not served.",
    )
    dimensions: dict[str, float | None] = Field(
        default_factory=dict, description="Named dimensions, e.g. SC, PQ, O for viescore."
    )
    details: dict[str, Any] = Field(default_factory=dict, description="Rubric-specific output.")
    spread: dict[str, float] | None = Field(None, description="Disagreement among judges.")
    judge: str | None = Field(None, description="Identity of the judge model(s).")
    calibrated: dict[str, Any] | None = Field(
        None,
        description="The calibrated value on the human scale and its interval, "
        '``{"value": v, "interval": [lo, hi]}`` (plus ``abstain`` or a ``note``), when a '
        "calibration file was applied (docs/calibration.md); ``value`` stays the raw score.",
    )
    input_images: dict[str, str] = Field(
        default_factory=dict, description="The sample's images shown to the judge: role -> sha256."
    )
    images_not_shown: dict[str, str] = Field(
        default_factory=dict,
        description="The sample's images never sent to the judge (the edit mask of "
        "mask-guided editing), role -> sha256: reports show them marked as such.",
    )
    image_files: dict[str, str] = Field(
        default_factory=dict,
        description="Where each image of input_images, images_not_shown and the tools can be "
        "read back: sha256 -> path.",
    )
    passthrough: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    provenance: dict[str, Any] = Field(
        default_factory=dict,
        description="What produced the numbers: cigeval_version, and per judge its endpoint "
        "(no credentials), the model names the server reported, the sha256 of the prompt "
        "templates and the finish reasons of its calls (see cigeval.evaluation.provenance).",
    )
    score_range: tuple[float, float] | None = Field(
        None,
        description="The range of ``value`` when the rubric declares one other than 0 to 1 "
        "(written to the record so readers check the value against it).",
    )
    fingerprint: str | None = Field(
        None,
        description="The run fingerprint: a hash of every setting that can change a score "
        "(see cigeval.results.fingerprint); records with different fingerprints are never "
        "pooled or paired.",
    )
    trace: Trace = Field(default_factory=Trace)
    _images: Mapping[str, Image.Image] = PrivateAttr(default_factory=dict)
    _file_hashes: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def degraded_questions(self) -> list[str]:
        """Ids of the sub-questions judged without the tool the plan chose."""
        return [s.question_id for s in self.sub_scores if s.degraded]

    @property
    def images(self) -> Mapping[str, Image.Image]:
        """The input images by role (kept for display, decoded when looked up; not
        serialised)."""
        return self._images

    @property
    def file_hashes(self) -> dict[str, str]:
        """The sha256 of the image files (or bytes) the sample was judged on, by the role the
        sample gives each, as they were loaded (not serialised: a run records them as
        ``provenance.image_files``)."""
        return self._file_hashes

    @property
    def ok(self) -> bool:
        """True when the evaluation finished with a score."""
        return self.status == "ok"

    def to_record(self, include_trace: bool = True) -> dict[str, Any]:
        """The output-JSONL record: id, task, status, score, sub_scores, error, pass-through."""
        record: dict[str, Any] = {
            "id": self.id,
            "task": self.task,
            "rubric": self.rubric,
            "status": self.status,
            "score": self.value,
            "sub_scores": [s.model_dump(mode="json") for s in self.sub_scores],
        }
        if self.error is not None:
            record["error"] = self.error
        if self.error_kind is not None:
            record["error_kind"] = self.error_kind
        if self.dimensions:
            record["dimensions"] = self.dimensions
        if self.details:
            record["details"] = self.details
        if self.spread is not None:
            record["spread"] = self.spread
        if self.calibrated is not None:
            record["calibrated"] = self.calibrated
        record.update(self.passthrough)
        if self.input_images:
            record["input_images"] = self.input_images
        if self.images_not_shown:
            record["images_not_shown"] = self.images_not_shown
        if self.image_files:
            record["image_files"] = self.image_files
        record["judge"] = self.judge
        record["usage"] = self.usage
        record["config"] = self.config
        if self.provenance:
            record["provenance"] = self.provenance
        if self.score_range is not None:
            record["score_range"] = list(self.score_range)
        if self.fingerprint is not None:
            record["fingerprint"] = self.fingerprint
        if include_trace:
            record["trace"] = [e.model_dump(mode="json") for e in self.trace.events]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Score:
        """Rebuild a Score from an output record (images are not restored)."""
        known = {
            "id",
            "task",
            "rubric",
            "status",
            "score",
            "sub_scores",
            "error",
            "error_kind",
            "dimensions",
            "details",
            "spread",
            "calibrated",
            "judge",
            "input_images",
            "images_not_shown",
            "image_files",
            "usage",
            "config",
            "provenance",
            "fingerprint",
            "score_range",
            "trace",
        }
        passthrough = {k: v for k, v in record.items() if k not in known}
        return cls(
            id=str(record["id"]),
            task=record["task"],
            rubric=record.get("rubric", "cigeval"),
            status=record["status"],
            value=record.get("score"),
            sub_scores=[SubScore.model_validate(s) for s in record.get("sub_scores", [])],
            error=record.get("error"),
            error_kind=record.get("error_kind"),
            dimensions=record.get("dimensions") or {},
            details=record.get("details") or {},
            spread=record.get("spread"),
            calibrated=record.get("calibrated"),
            judge=record.get("judge"),
            input_images=record.get("input_images") or {},
            images_not_shown=record.get("images_not_shown") or {},
            image_files=record.get("image_files") or {},
            usage=record.get("usage") or {},
            config=record.get("config") or {},
            provenance=record.get("provenance") or {},
            fingerprint=record.get("fingerprint"),
            score_range=_range_or_none(record.get("score_range")),
            trace=Trace.model_validate({"events": record.get("trace") or []}),
            passthrough=passthrough,
        )

    def to_html(self) -> str:
        """This score as an HTML card (the report's): condition text, input images (output
        last), the judge, each sub-question with its tool and images, the reasoning. Model
        text is escaped; images are inline, so the HTML stands alone."""
        from cigeval.results.html import record_to_html

        record = self.to_record(include_trace=False)
        images = self.images_by_hash()
        # images held in memory without a hash (a Score built by hand) are still shown
        hashed = {**self.input_images, **self.images_not_shown}
        unhashed = {role: f"role:{role}" for role in self.images if role not in hashed}
        images.update({key: self.images[role] for role, key in unhashed.items()})
        if unhashed:
            record["input_images"] = {**record.get("input_images", {}), **unhashed}
        return record_to_html(record, images, self.judge or "judge")

    def images_by_hash(self) -> dict[str, Image.Image]:
        """The input and tool images held in memory, by the sha256 the record names them by."""
        named = {**self.input_images, **self.images_not_shown}
        images = {sha: self.images[role] for role, sha in named.items() if role in self.images}
        for sub in self.sub_scores:
            for role, image in sub.tool_images.items():
                sha = sub.tool_image_ids.get(role)
                if sha is not None:
                    images[sha] = image
        return images

    def _repr_html_(self) -> str:
        return self.to_html()

    def summary(self, reasoning: bool = False) -> str:
        """A few readable lines: the sample, task, status and value, then one line per
        sub-question (score, tool, how the judging departed from the plan, error);
        ``reasoning=True`` adds each sub-question's reasoning beneath it. ``str(score)`` and
        ``repr(score)`` are this summary; the full record is :meth:`to_record`."""
        return "\n".join(_summary_lines(self, reasoning))

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return self.summary()


#: Longest error or note text a summary shows (the record keeps all of it).
_SHOWN_CHARS = 240


def _shorten(text: str) -> str:
    """``text`` on one line, cut at :data:`_SHOWN_CHARS` with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= _SHOWN_CHARS else line[: _SHOWN_CHARS - 1] + "…"


def _summary_lines(score: Score, reasoning: bool) -> list[str]:
    rubric = "" if score.rubric == "cigeval" else f", rubric {score.rubric}"
    outcome = f"ok, {score.value:.3g}" if score.ok and score.value is not None else score.status
    failed = [s for s in score.sub_scores if s.error]
    if score.error and failed and all(f"{s.question_id}: " in score.error for s in failed):
        outcome += f" in {len(failed)} sub-question(s)"  # each line below says why
    elif score.error:
        outcome += f": {_shorten(score.error)}"
    lines = [f"Score {score.id!r} ({score.task}{rubric}): {outcome}"]
    if score.dimensions:
        shown = ", ".join(
            f"{name} {'-' if value is None else f'{value:.3g}'}"
            for name, value in score.dimensions.items()
        )
        lines.append(f"  dimensions: {shown}")
    for sub in score.sub_scores:
        lines.append(f"  {sub.question_id}: {_sub_score_text(sub)}")
        if reasoning and sub.reasoning:
            lines.append(f"      {_shorten(sub.reasoning)}")
    if score.judge:
        calls = score.usage.get("calls")
        tokens = score.usage.get("prompt_tokens", 0) + score.usage.get("completion_tokens", 0)
        usage = f"; {calls} model call(s)" if calls else ""
        usage += f", {tokens:,} tokens" if calls and tokens else ""
        lines.append(f"  judge: {score.judge}{usage}")
    return lines


def _sub_score_text(sub: SubScore) -> str:
    text = "no score" if sub.score is None else f"{sub.score:g}/{sub.scale[1]:g}"
    if sub.tool:
        text += f" via {sub.tool}" + (f" ({sub.tool_query!r})" if sub.tool_query else "")
    else:
        text += " without a tool"
    if sub.degraded:
        text += f" [degraded: {_shorten(sub.note or 'judged without the planned tool')}]"
    elif sub.note:
        text += f" [{_shorten(sub.note)}]"
    if sub.error:
        text += f"; error: {_shorten(sub.error)}"
    return text


def _range_or_none(value: Any) -> tuple[float, float] | None:
    """A record's ``score_range`` as a pair of numbers, or None when it has no usable one."""
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = value
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
            return float(low), float(high)
    return None
