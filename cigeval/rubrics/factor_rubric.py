"""FactorRubric: Likert-scored factors with short justifications, offline or online.

A factor rubric shows the judge the edited image next to either a ground-truth edit
("offline", reference-based) or the source image ("online", reference-free), describes each
factor in the wording of that mode (offline: against the ground truth), and asks for one JSON
object with an integer score and a 15-30 word justification per factor. The reply is
validated strictly (:mod:`cigeval.rubrics.factor_parsing`) and re-asked with the exact problem
when it fails; after the last re-ask the sample is an ``error`` record.
The built-in factor rubrics (:mod:`cigeval.rubrics.factors`) and user rubrics
(:func:`cigeval.rubrics.custom.define_rubric`) are all instances of this class.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cigeval._regular_file import MAX_TEXT_FILE_BYTES, read_regular
from cigeval.errors import ConfigError, InputError, ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.prompts import render_string
from cigeval.rubrics._shared import (
    choice_option,
    failed_verdict,
    labelled_images,
    render_for,
    rubric_options,
)
from cigeval.rubrics.factor_parsing import FactorReplySpec, parse_factor_reply
from cigeval.rules import aggregate as aggregate_rule
from cigeval.sample import Sample
from cigeval.sample_run import SampleRun
from cigeval.score import SubScore, Verdict

#: Images shown per mode, in order: the standard to judge against, then the edited image.
MODE_ROLES: dict[str, tuple[str, str]] = {
    "offline": ("ground_truth", "output"),
    "online": ("source", "output"),
}
#: How each shown image is labelled for the judge, per mode.
MODE_LABELS: dict[str, dict[str, str]] = {
    "offline": {"ground_truth": "the ground-truth (reference) edit", "output": "the edited image"},
    "online": {"source": "the source image before editing", "output": "the edited image"},
}
#: Meaning of each point of the 7-point scale, per mode.
LIKERT_7: dict[str, tuple[str, ...]] = {
    "offline": (
        "strongly disagree: far worse than the ground truth",
        "disagree: clearly worse than the ground truth",
        "somewhat disagree: noticeably worse than the ground truth",
        "neither: about as good as the ground truth, with mixed results",
        "somewhat agree: close to the ground truth or slightly better",
        "agree: matches the ground truth well",
        "strongly agree: equals or surpasses the ground truth",
    ),
    "online": (
        "strongly disagree: the factor fails badly",
        "disagree: serious, obvious problems",
        "somewhat disagree: clear problems",
        "neither: mixed, some things right and some wrong",
        "somewhat agree: small problems only",
        "agree: hardly any problem",
        "strongly agree: no visible problem at all",
    ),
}

#: A user aggregate: factor scores (on the rubric's scale) -> value in [0, 1].
AggregateFunction = Callable[[dict[str, int]], float]


@dataclass(frozen=True)
class FactorText:
    """A factor's wording for one mode: what it measures, what to inspect, and the bands.

    Offline (reference-based) wording states every clause against the ground truth ("as
    realistic as in the ground truth"); online wording judges the edited image on its own
    terms. ``checks``, ``high`` and ``low`` are bullet lists, as in :class:`Factor`.
    """

    definition: str
    checks: tuple[str, ...] = ()
    high: tuple[str, ...] = ()
    low: tuple[str, ...] = ()


@dataclass(frozen=True)
class Factor:
    """One factor of a rubric.

    ``key`` is the JSON key the judge must use; ``definition`` says what is measured.
    ``checks``, ``high`` and ``low`` are optional bullet lists: what to look at, and when a
    score belongs in the top or bottom band. That text serves every mode, so it should read in
    both (the prompt says whether the standard is the ground truth or the source image).
    ``offline`` and ``online`` optionally give a mode its own wording (a :class:`FactorText`),
    which then replaces definition, checks and bands in that mode, e.g. reference-relative
    bands for the offline mode.
    """

    key: str
    definition: str
    title: str = ""
    checks: tuple[str, ...] = ()
    high: tuple[str, ...] = ()
    low: tuple[str, ...] = ()
    offline: FactorText | None = None
    online: FactorText | None = None

    def __post_init__(self) -> None:
        if not self.key.isidentifier():
            raise ConfigError(
                f"factor key {self.key!r} must be an identifier (letters, digits, underscores)"
            )
        if not self.title:
            object.__setattr__(self, "title", self.key.replace("_", " ").title())
        for mode in MODE_ROLES:
            text = getattr(self, mode)
            if text is not None and not isinstance(text, FactorText):
                raise ConfigError(f"factor {self.key!r}: {mode} must be a FactorText")

    def in_mode(self, mode: str) -> Factor:
        """This factor as the judge sees it in ``mode``: that mode's wording, or the shared one."""
        text = getattr(self, mode) if mode in MODE_ROLES else None
        if text is None:
            return replace(self, offline=None, online=None)
        return Factor(self.key, text.definition, self.title, text.checks, text.high, text.low)


class FactorRubric:
    """A rubric of named factors, each scored as an integer on ``scale`` with a justification.

    ``mode`` fixes offline/online; ``"auto"`` (default) uses offline when the sample has a
    ``ground_truth`` image, else online, and ``rubric_options={"mode": ...}`` overrides it per
    run. ``result_key`` may contain ``{mode}``. ``aggregate`` is ``"mean"`` (default),
    ``"min"``, ``"median"``, ``"max"``, a dict of factor weights (weighted mean) — all mapped to
    [0, 1] as (x - low) / (high - low) — or a function of the factor scores returning a value
    in [0, 1] itself (``"min_tiebreak_mean"`` and every rule of
    :data:`cigeval.rules.AGGREGATE_RULES` work too). ``template`` replaces the task description
    (Jinja text, or a Path to a file); the rating steps, ``constraints`` (extra rules per mode,
    e.g. ``{"offline": ["For alignment: compare ..."]}``) and the answer format are always
    appended by cigeval, so prompt and validator agree.
    """

    def __init__(
        self,
        name: str,
        factors: Sequence[Factor],
        *,
        description: str = "",
        focus: str = "",
        scale: tuple[int, int] = (1, 7),
        mode: str = "auto",
        result_key: str = "{mode}_factor_results",
        aggregate: str | Mapping[str, float] | AggregateFunction = "mean",
        justification_words: tuple[int, int] | None = (15, 30),
        template: str | Path | None = None,
        anchors: Mapping[str, Sequence[str]] | None = None,
        constraints: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        keys = [f.key for f in factors]
        if not keys or len(set(keys)) != len(keys):
            raise ConfigError(f"rubric {name!r} needs one or more factors with distinct keys")
        low, high = scale
        if not (isinstance(low, int) and isinstance(high, int) and low < high):
            raise ConfigError(f"scale must be two integers (low, high) with low < high: {scale}")
        if mode not in ("auto", *MODE_ROLES):
            raise ConfigError(f"mode {mode!r}; use auto, offline or online")
        if isinstance(aggregate, Mapping) and set(aggregate) != set(keys):
            raise ConfigError(f"aggregate weights must name exactly the factors {keys}")
        for label_mode, labels in (anchors or {}).items():
            if label_mode not in MODE_ROLES or len(labels) != high - low + 1:
                raise ConfigError(
                    f"anchors[{label_mode!r}] must be offline/online with {high - low + 1} labels"
                )
        unknown_modes = sorted(set(constraints or {}) - set(MODE_ROLES))
        if unknown_modes:
            raise ConfigError(
                f"constraints are given per mode (offline, online), not {unknown_modes}"
            )
        self.name = name
        self.factors = tuple(factors)
        self.description = description or f"Factor rubric: {', '.join(keys)} ({low}-{high})."
        self.focus = focus or "the factors listed below"
        self.scale = (low, high)
        self.mode = mode
        self.result_key = result_key
        self.aggregate = aggregate
        self.justification_words = justification_words
        self.template = (
            read_regular(template, MAX_TEXT_FILE_BYTES).decode("utf-8")
            if isinstance(template, Path)
            else template
        )
        self.anchors = anchors or (LIKERT_7 if self.scale == (1, 7) else None)
        self.constraints = {mode: tuple(rules) for mode, rules in (constraints or {}).items()}

    # -- inputs ---------------------------------------------------------------------------

    def validate(self, sample: Sample) -> None:
        """Require images.output, the instruction, and the image of the mode (or either one)."""
        provided = sample.images.provided()
        problems = []
        if "output" not in provided:
            problems.append("missing image 'output' (images.output, the edited image)")
        if not sample.instruction:
            problems.append("missing text field 'instruction'")
        if self.mode == "offline" and "ground_truth" not in provided:
            problems.append("offline mode needs images.ground_truth")
        elif self.mode == "online" and "source" not in provided:
            problems.append("online mode needs images.source")
        elif self.mode == "auto" and not {"ground_truth", "source"} & set(provided):
            problems.append("needs images.ground_truth (offline) or images.source (online)")
        if problems:
            raise InputError(f"rubric {self.name}: " + "; ".join(problems), sample.id)

    def resolve_mode(self, run: SampleRun) -> str:
        """offline or online for this run: the rubric's, the option's, or by available images."""
        options = rubric_options(run, self.name, ["mode"])
        mode = choice_option(options, "mode", self.mode, ("auto", *MODE_ROLES))
        if mode == "auto":
            mode = "offline" if "ground_truth" in run.images else "online"
        missing = [r for r in MODE_ROLES[mode] if r not in run.images]
        if missing:
            raise InputError(
                f"rubric {self.name} in {mode} mode needs images.{missing[0]}", run.sample.id
            )
        return mode

    # -- prompt ---------------------------------------------------------------------------

    def reply_spec(self, run: SampleRun, mode: str) -> FactorReplySpec:
        """The shape a valid reply must have for this sample and mode."""
        return FactorReplySpec(
            image_id=run.sample.id,
            result_key=self.result_key.format(mode=mode),
            factors=tuple(f.key for f in self.factors),
            scale=self.scale,
            justification_words=self.justification_words,
        )

    def factors_in_mode(self, mode: str) -> tuple[Factor, ...]:
        """The factors worded for ``mode`` (see :meth:`Factor.in_mode`)."""
        return tuple(f.in_mode(mode) for f in self.factors)

    def build_messages(self, run: SampleRun, mode: str, spec: FactorReplySpec) -> list[Message]:
        """System message, then one user message: description, labelled images, answer format."""
        low, high = self.scale
        words = self.justification_words
        variables: dict[str, Any] = {
            "rubric": self.name,
            "focus": self.focus,
            "mode": mode,
            "factors": self.factors_in_mode(mode),
            "instruction": run.sample.instruction,
            "scale_low": low,
            "scale_high": high,
            "high_band": f"{high - 1}-{high}",
            "low_band": f"{low}-{low + (high - low) // 2 - 1}" if high - low >= 4 else str(low),
        }
        body = (
            render_string(self.template, **variables)
            if self.template is not None
            else render_for(run, "rubric_factors.j2", **variables)
        )
        example = {
            f.key: {"score": f"<integer {low}-{high}>", "justification": "<evidence>"}
            for f in self.factors
        }
        skeleton = json.dumps({"image_id": spec.image_id, spec.result_key: example}, indent=2)
        anchors = (self.anchors or {}).get(mode)
        tail = render_for(
            run,
            "rubric_factors_output.j2",
            mode=mode,
            scale_low=low,
            scale_high=high,
            anchors=list(zip(range(low, high + 1), anchors, strict=True)) if anchors else [],
            min_words=words[0] if words else None,
            max_words=words[1] if words else None,
            factor_count=len(self.factors),
            constraints=self.constraints.get(mode, ()),
            image_id=spec.image_id,
            skeleton=skeleton,
        )
        parts: list[TextPart | ImagePart] = [TextPart(body)]
        parts += labelled_images(run, MODE_ROLES[mode], MODE_LABELS[mode])
        parts.append(TextPart(tail))
        system = render_for(run, "rubric_factors_system.j2", focus=self.focus)
        return [Message.text("system", system), Message("user", tuple(parts))]

    # -- scoring --------------------------------------------------------------------------

    def value(self, scores: dict[str, int]) -> float:
        """The sample's value in [0, 1] from the factor scores (see the class docstring)."""
        low, high = self.scale
        if callable(self.aggregate):
            result = float(self.aggregate(dict(scores)))
            if not 0.0 <= result <= 1.0:
                raise ConfigError(f"rubric {self.name}: aggregate returned {result}, not in [0, 1]")
            return result
        if isinstance(self.aggregate, Mapping):
            weights = self.aggregate
            total = sum(weights.values())
            raw = sum(weights[k] * scores[k] for k in scores) / total
        else:
            raw = aggregate_rule([float(v) for v in scores.values()], self.aggregate)
        return (raw - low) / (high - low)

    def value_mapping(self) -> str:
        """How :meth:`value` maps factor scores to [0, 1], in words (stored in details)."""
        low, high = self.scale
        if callable(self.aggregate):
            return f"user function {getattr(self.aggregate, '__name__', 'aggregate')}"
        how = "weighted mean" if isinstance(self.aggregate, Mapping) else self.aggregate
        return f"({how} - {low}) / {high - low}"

    async def evaluate(self, run: SampleRun) -> Verdict:
        """One judge call (plus re-asks); a failed Verdict when the reply never validates."""
        mode = self.resolve_mode(run)
        spec = self.reply_spec(run, mode)
        details: dict[str, Any] = {"mode": mode, "scale": list(self.scale)}
        try:
            reply = await run.judge.ask(
                f"rubric:{self.name}",
                self.build_messages(run, mode, spec),
                lambda text: parse_factor_reply(text, spec),
            )
        except ParseError as exc:
            return failed_verdict(exc, details)
        results: dict[str, dict[str, Any]] = reply[spec.result_key]
        scores = {key: int(entry["score"]) for key, entry in results.items()}
        details.update(reply)
        written_id = reply["image_id"]
        if written_id is None or str(written_id) != spec.image_id:
            written = "no image_id" if written_id is None else repr(written_id)
            details["warnings"] = [
                f"the reply gives {written} instead of the sample id {spec.image_id!r}; "
                "accepted (image_id only echoes the sample)"
            ]
        details["value_mapping"] = self.value_mapping()
        return Verdict(
            value=self.value(scores),
            sub_scores=[
                SubScore(
                    question_id=f.key,
                    question=f"{f.title}: {f.definition}",
                    score=float(scores[f.key]),
                    scale=self.scale,
                    reasoning=results[f.key]["justification"],
                )
                for f in self.factors_in_mode(mode)
            ],
            details=details,
        )
