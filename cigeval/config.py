"""The settings of a run, as frozen pydantic models: the single source of truth.

- :class:`EvalConfig`: everything that decides how a sample is judged (recorded with every
  Score); the tools' own settings are nested in it (``grounding``, ``difference``,
  ``zoom``). Its ``method`` (``paper``, the default, or ``extended``) fills in every setting
  that is not given explicitly (:mod:`cigeval.method`).
- :class:`RunConfig`: how a batch runs (concurrency, limits, caching; for a results file,
  resume, retries of errors, limit); none of it changes an answer.
- :class:`EnsembleConfig`: how several judgments per sample are made and combined.
- :class:`JudgeSpec`: one judge as a value: its models and the three settings above.

Every field that the command line exposes names its flag (``json_schema_extra=flag(...)``,
:mod:`cigeval._flag`); ``cigeval.cli`` builds the flags, their help and their defaults from
these fields, so no default is written twice. Descriptions describe the field.
The models build their validators on first use (``defer_build``): ``--help`` reads their
fields without paying for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationInfo,
    field_validator,
    model_validator,
)

from cigeval._cache_dir import default_cache_dir
from cigeval._caller import in_callers_words
from cigeval._flag import flag as _flag
from cigeval._regular_file import MAX_IMAGE_BYTES
from cigeval.errors import ConfigError
from cigeval.messages import (
    DEFAULT_MAX_REPLY_CHARS,
    PROVIDER_DEFAULT,
    TOKEN_CAP_FACTOR,
    GenerationSettings,
)
from cigeval.method import DEFAULT_METHOD, Method, with_method_settings
from cigeval.rules import COMBINE_RULES, Aggregate
from cigeval.tools.settings import DifferenceConfig, GroundingConfig, ZoomConfig

#: The sampling settings the paper's method leaves to the provider (not sent unless given).
SAMPLING_SETTINGS = ("temperature", "max_tokens", "seed")


class EvalConfig(BaseModel):
    """Everything that decides how a sample is judged. Recorded with every Score.

    ``method`` fills in the settings marked "set by --method" that are not given; settings
    given explicitly always win. ``model_fields_set`` holds exactly the settings given, so
    ``EvalConfig(**config.model_dump(exclude_unset=True), method="extended")`` is the same
    explicit settings under the other method.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    method: Method = Field(
        DEFAULT_METHOD,
        description="paper (the CIGEval paper and its official code) or extended (cigeval's "
        "improvements, not yet measured against human ratings): the defaults of every setting "
        "marked 'set by `method`' (docs/what-the-judge-sees.md)",
        json_schema_extra=_flag("--method"),
    )
    rubric: str = Field(
        "cigeval",
        description="judging scheme: cigeval, viescore, lmm_score, ... ('cigeval rubrics')",
        json_schema_extra=_flag("--rubric", metavar="NAME"),
    )
    temperature: float | None = Field(
        None,
        ge=0,
        description="sampling temperature of the judge (0: deterministic; paper: not sent, "
        "the provider's default, as the official code)",
        json_schema_extra=_flag("--temperature", by_method=True),
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="reply length limit per call",
        json_schema_extra=_flag("--max-tokens", by_method=True),
    )
    max_tokens_cap: int | None = Field(
        None,
        ge=1,
        description="a reply cut at the token limit (finish reason length or content_filter) "
        "is asked again with twice the budget, up to this many tokens, then is an error "
        f"(default: {TOKEN_CAP_FACTOR} x `max_tokens`; equal to `max_tokens`: never ask again)",
        json_schema_extra=_flag("--max-tokens-cap", metavar="TOKENS"),
    )
    max_reply_chars: int = Field(
        DEFAULT_MAX_REPLY_CHARS,
        ge=1,
        description="a longer reply is cut to this many characters, counted and asked again "
        "as unusable; records never hold more",
        json_schema_extra=_flag("--max-reply-chars", metavar="CHARS"),
    )
    seed: int | None = Field(
        None,
        description="sent where the API takes a seed (paper: not sent, as the official code)",
        json_schema_extra=_flag("--seed", by_method=True),
    )
    top_p: float | None = Field(
        None,
        gt=0,
        le=1,
        description="nucleus sampling of the judge",
        json_schema_extra=_flag("--top-p"),
    )
    aggregate: Aggregate = Field(
        "min",
        description="how a sample's sub-scores become its score (paper: min)",
        json_schema_extra=_flag("--aggregate"),
    )
    max_rounds: int = Field(
        1,
        ge=1,
        description="thought/action/observation rounds per sub-question (paper: 1)",
        json_schema_extra=_flag("--max-rounds"),
    )
    max_parse_retries: int = Field(
        2,
        ge=0,
        description="under `reply_parsing` strict: re-asks of the same model after an unusable "
        "reply",
        json_schema_extra=_flag("--max-parse-retries"),
    )
    reply_parsing: Literal["official", "strict"] = Field(
        "official",
        description="how the cigeval rubric reads the planner's and the judge's replies: "
        "official (as the official code, quirks included: a score read from its digits, plans "
        "by position, an unreadable reply sent to a repair request, a failed sample tried "
        "three times; docs/official-code.md) or strict (cigeval's reading: the score as "
        "written, plans by task_id, the same model asked again after an unusable reply; "
        "always with `max_rounds` above 1)",
        json_schema_extra=_flag("--reply-parsing", by_method=True),
    )
    tools: tuple[str, ...] | None = Field(
        None,
        description="comma-separated tools offered ('' = none; default: every registered "
        "tool, Zoom under extended only)",
        json_schema_extra=_flag("--tools", metavar="NAMES"),
    )
    tool_errors: Literal["fallback", "fail"] = Field(
        "fallback",
        description="when a tool fails on a sample: judge the sub-question without it (noted "
        "in the sub-score and the trace), or fail the sub-question",
        json_schema_extra=_flag("--tool-errors"),
    )
    tool_use: Literal["official", "any"] = Field(
        "official",
        description="which planned tools run: official (as the official evaluate pass: "
        "Grounding and Scene Graph in every task, Difference only in mask-guided editing; any "
        "other choice is judged without a tool, with a note), or any (every offered tool in "
        "every task)",
        json_schema_extra=_flag("--tool-use", by_method=True),
    )
    tool_text: Literal["focus", "detailed"] = Field(
        "focus",
        description="what the judge is told of a Grounding or Difference result: focus (look "
        "at the highlighted parts, as the official code), or detailed (the boxes with their "
        "coordinates, shares of the image, mask statistics)",
        json_schema_extra=_flag("--tool-text", by_method=True),
    )
    planner_prompt: Literal["paper", "extended"] = Field(
        "paper",
        description="the tool-selection request: paper (the paper's tool descriptions, the "
        "note on processed images in every task, the images in the task's input order, both "
        "concept similarities asked as one task) or extended (cigeval's longer tool "
        "descriptions, images in the questions' order, one entry per sub-question)",
        json_schema_extra=_flag("--planner-prompt", by_method=True),
    )
    scoring_rules: Literal["paper", "extended"] = Field(
        "paper",
        description="the scoring rules of each sub-question: paper (the appendix prompts' "
        "meaning, nothing added) or extended (with what to compare: counts and relations, "
        "identity, shape, colours, markings and details, the subject to ignore)",
        json_schema_extra=_flag("--scoring-rules", by_method=True),
    )
    scene_graph_prompt: Literal["paper", "extended"] = Field(
        "paper",
        description="the Scene Graph request: paper (objects, attributes and relationships, "
        "as the official prompt) or extended (object ids, a fixed JSON form, only what is "
        "visible)",
        json_schema_extra=_flag("--scene-graph-prompt", by_method=True),
    )
    request_layout: Literal["official", "cigeval"] = Field(
        "official",
        description="how the planner, judge and scene-graph requests are laid out: official "
        "(one user message, the whole text first, then the images unlabelled, the tool text "
        "inside the rules, per-task templates as the official code; built-in tasks) or "
        "cigeval (a system message, labelled images between the text parts, the tool output "
        "after the images)",
        json_schema_extra=_flag("--request-layout", by_method=True),
    )
    scene_graph_calls: Literal["per_question", "per_image"] = Field(
        "per_question",
        description="how often a scene graph is asked for: per_question (anew for every "
        "sub-question that uses the tool, as the official code) or per_image (once per "
        "distinct image per sample, shared by the sub-questions)",
        json_schema_extra=_flag("--scene-graph-calls", by_method=True),
    )
    scene_graph_text: Literal["as_written", "json"] = Field(
        "as_written",
        description="how a scene graph reaches the judge: as_written (the text of the reply's "
        "json-fenced block, else the whole reply, as the official code) or json (parsed and "
        "written again as indented JSON)",
        json_schema_extra=_flag("--scene-graph-text", by_method=True),
    )
    scene_graph_model: str | None = Field(
        None,
        description="the model that writes scene graphs, as a model spec (default: the "
        "judge); the paper used GPT-4o scene graphs for every backbone",
        json_schema_extra=_flag("--scene-graph-model", metavar="SPEC"),
    )
    highlight_large_boxes: Literal["dim", "undimmed"] = Field(
        "dim",
        description="boxes covering 90 percent of an image or more: dim the rest as any box "
        "(paper), or leave the image undimmed and say so (extended)",
        json_schema_extra=_flag("--highlight-large-boxes", by_method=True),
    )
    grounding: GroundingConfig = Field(default_factory=GroundingConfig)
    difference: DifferenceConfig = Field(default_factory=DifferenceConfig)
    zoom: ZoomConfig = Field(default_factory=ZoomConfig)
    image_encoding: Literal["jpeg75", "original"] = Field(
        "jpeg75",
        description="how every image reaches the judge: jpeg75 (as the official code sends "
        "it: EXIF-transposed, RGB, JPEG at quality 75, sample and tool images alike) or "
        "original (RGB PNG and JPEG files byte for byte, other images as `image_format`)",
        json_schema_extra=_flag("--image-encoding", by_method=True),
    )
    image_conversion: Literal["official", "rescale"] = Field(
        "official",
        description="how an image that is not 8-bit RGB becomes RGB, for the judge and the "
        "tools: official (Pillow's plain conversion, as the official code: 16-bit values "
        "above 255 turn white, transparency is dropped) or rescale (high bit depths "
        "stretched to 0-255, transparency composited on white)",
        json_schema_extra=_flag("--image-conversion", by_method=True),
    )
    image_format: Literal["PNG", "JPEG"] = Field(
        "PNG",
        description="under `image_encoding` original: encoding of images that cannot be sent "
        "as they are",
        json_schema_extra=_flag("--image-format"),
    )
    prompt_dir: str | None = Field(
        None,
        description="folder of templates replacing the built-in ones of the same name; under "
        "`request_layout` official it must hold every paper template (as the command "
        "cigeval official-prompts writes them)",
        json_schema_extra=_flag("--prompt-dir", metavar="DIR"),
    )
    rubric_options: dict[str, Any] = Field(
        default_factory=dict,
        description="rubric-specific setting, e.g. mode=online (repeatable)",
        json_schema_extra=_flag("--rubric-option", metavar="KEY=VALUE"),
    )

    @field_validator("tools", mode="before")
    @classmethod
    def _tool_names(cls, value: Any) -> Any:
        """A comma-separated string, as ``--tools`` takes it, is the list of its names."""
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("max_tokens_cap")
    @classmethod
    def _cap_covers_the_budget(cls, cap: int | None, info: ValidationInfo) -> int | None:
        budget = info.data.get("max_tokens")
        if cap is not None and isinstance(budget, int) and cap < budget:
            budget_is = in_callers_words("--max-tokens", "max_tokens")
            raise ValueError(f"must be at least {budget_is} ({budget}), got {cap}")
        return cap

    @property
    def token_cap(self) -> int | None:
        """The largest token budget a re-ask after a cut reply may use (``max_tokens_cap``,
        by default :data:`~cigeval.messages.TOKEN_CAP_FACTOR` x ``max_tokens``)."""
        if self.max_tokens_cap is not None:
            return self.max_tokens_cap
        if self.max_tokens is None:  # no budget is sent, so none can grow
            return None
        return TOKEN_CAP_FACTOR * self.max_tokens

    @model_validator(mode="wrap")
    @classmethod
    def _method_settings(cls, data: Any, handler: ModelWrapValidatorHandler[EvalConfig]) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        filled, chosen_presets = with_method_settings(data)
        config = handler(filled)
        if config.max_rounds > 1 and config.reply_parsing == "official":
            if "reply_parsing" in data:
                raise ValueError(
                    "reply_parsing official reads replies as the official code, which asks "
                    "each sub-question once: with max_rounds above 1 use reply_parsing strict"
                )
            # cigeval's rounds are read the strict way; the method's choice gives way
            object.__setattr__(config, "reply_parsing", "strict")
        # Only what the caller gave counts as set: the method's choices are not "explicit".
        object.__setattr__(config, "__pydantic_fields_set__", set(data) & set(cls.model_fields))
        for name in chosen_presets:
            nested = getattr(config, name)
            object.__setattr__(
                nested, "__pydantic_fields_set__", nested.model_fields_set - {"preset"}
            )
        return config

    def generation(self, temperature: float | None = None) -> GenerationSettings:
        """The generation settings for a judge call."""
        return GenerationSettings(
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            top_p=self.top_p,
        )

    def record(self) -> dict[str, Any]:
        """JSON-serialisable form stored with each Score (never holds secrets); a sampling
        setting that is not sent reads "provider default"."""
        record = self.model_dump(mode="json")
        for name in SAMPLING_SETTINGS:
            if record.get(name) is None:
                record[name] = PROVIDER_DEFAULT
        return record


def calls_in_flight(run_config: RunConfig, concurrency: int | None = None) -> int:
    """The limit of model calls in flight of a run: ``max_calls_in_flight``, or
    :data:`CALLS_PER_SAMPLE` per sample in flight (``concurrency``, by default the run's)."""
    samples = concurrency or run_config.concurrency
    return run_config.max_calls_in_flight or CALLS_PER_SAMPLE * samples


#: The default cap of one reply's bytes (``--max-reply-bytes``): 8 MiB, more than a reply of
#: 4,096 tokens with 20 top log probabilities each needs (about 5 MB). Every call in flight may
#: hold this much while a server streams without end (24 calls at the default concurrency).
MAX_REPLY_BYTES = 8 * 1024 * 1024

#: Model calls one sample makes at once in the built-in tasks, at most: the three judge calls
#: of a multi-concept sample (the planning call comes before them). The default limit of calls
#: in flight is this many per sample in flight, so no sample waits for another's calls.
CALLS_PER_SAMPLE = 3


class RunConfig(BaseModel):
    """How a batch runs: concurrency, limits, caching and, for a run over a results file,
    resume, retries of errors, limit and guards (:data:`RUN_FILE_FIELDS`). None of it changes
    an answer."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    concurrency: int = Field(
        8, ge=1, description="samples evaluated at once", json_schema_extra=_flag("--concurrency")
    )
    max_calls_in_flight: int | None = Field(
        None,
        ge=1,
        description="model calls in flight at once (default: 3 x concurrency)",
        json_schema_extra=_flag("--max-calls-in-flight"),
    )
    requests_per_minute: float | None = Field(
        None, gt=0, description="requests-per-minute limit", json_schema_extra=_flag("--rpm")
    )
    tokens_per_minute: float | None = Field(
        None, gt=0, description="tokens-per-minute limit", json_schema_extra=_flag("--tpm")
    )
    timeout_s: float = Field(
        120.0,
        gt=0,
        description="seconds one attempt of a model call may take in all (connect, send, "
        "wait, read); a reply that trickles past it fails that attempt",
        json_schema_extra=_flag("--timeout", metavar="SECONDS"),
    )
    max_reply_bytes: int = Field(
        MAX_REPLY_BYTES,
        ge=1,
        description="bytes read of one reply at most: a reply that passes it (a server "
        "streaming without end) fails that attempt, retried as `max_retries` says",
        json_schema_extra=_flag("--max-reply-bytes", metavar="BYTES"),
    )
    max_retries: int = Field(
        6,
        ge=0,
        description="retries of a failed call (429, 5xx, ...)",
        json_schema_extra=_flag("--max-retries"),
    )
    retry_backoff_s: float = Field(
        0.5,
        gt=0,
        description="wait before the first retry, doubled each retry (jittered, capped at 30 s); "
        "a server's Retry-After replaces it, up to max_retry_after_s",
        json_schema_extra=_flag("--retry-backoff", metavar="SECONDS"),
    )
    max_retry_after_s: float = Field(
        60.0,
        ge=0,
        description="longest wait before a retry that a server's Retry-After is honoured for; "
        "a longer one is cut to this",
        json_schema_extra=_flag("--max-retry-after-s", metavar="SECONDS"),
    )
    retry_wait_budget_s: float = Field(
        120.0,
        ge=0,
        description="longest total wait between the attempts of one model call; a call whose "
        "next wait would pass it fails at once",
        json_schema_extra=_flag("--retry-wait-budget-s", metavar="SECONDS"),
    )
    cache_dir: Path | None = Field(
        default_factory=default_cache_dir,
        description="response cache folder (default: $CIGEVAL_CACHE_DIR or the user cache dir)",
        json_schema_extra=_flag("--cache-dir", metavar="DIR"),
    )
    max_image_bytes: int = Field(
        MAX_IMAGE_BYTES,
        ge=1,
        description="an image file larger than this many bytes is that sample's error, refused "
        "before it is read or hashed (so is a path naming no regular file: a FIFO, a device, "
        "a folder)",
        json_schema_extra=_flag("--max-image-bytes", metavar="BYTES"),
    )
    use_cache: bool = Field(
        True,
        description="use the response cache (read and write it)",
        json_schema_extra=_flag("--no-cache", negate=True),
    )
    preflight: bool = Field(
        True,
        description="run the checks made before the first sample (the judge server answers "
        "and serves the model, local weights and the offered tools' weights load)",
        json_schema_extra=_flag("--no-preflight", negate=True),
    )
    local_batch_size: int = Field(
        8,
        ge=1,
        description="requests a local model (hf:...) answers in one generate call when they "
        "arrive together (1: one at a time)",
        json_schema_extra=_flag("--local-batch-size"),
    )
    image_dir: Path | None = Field(
        None,
        description="folder keeping every image shown to the judge that is not an input file "
        "as it is (highlighted tool outputs, converted images), named by hash, for reports "
        "and trajectory exports (command line default: RESULTS.images next to the results file)",
        json_schema_extra=_flag("--image-dir", metavar="DIR"),
    )
    batch: bool = Field(
        False,
        description="send every model call of openai: judges through the provider's Batch API "
        "(upload, create, poll, download; half price on OpenAI, answers within a day): each "
        "stage of the agent (plan, judge, re-asks) as a handful of batches (docs/batch.md)",
        json_schema_extra=_flag("--batch"),
    )
    batch_poll_s: float = Field(
        30.0,
        gt=0,
        description="seconds between status checks of a submitted batch",
        json_schema_extra=_flag("--batch-poll", metavar="SECONDS"),
    )
    batch_samples: int = Field(
        1000,
        ge=1,
        description="samples in flight at once under `batch`; each stage's calls of these "
        "samples share batches (`concurrency` does not apply under `batch`)",
        json_schema_extra=_flag("--batch-samples"),
    )
    batch_max_requests: int = Field(
        50_000,
        ge=1,
        description="requests per batch file (OpenAI's limit: 50,000); larger stages are split",
        json_schema_extra=_flag("--batch-max-requests"),
    )
    batch_max_bytes: int = Field(
        200_000_000,
        ge=1,
        description="bytes per batch file (OpenAI's limit: 200 MB); larger stages are split",
        json_schema_extra=_flag("--batch-max-bytes"),
    )
    batch_retries: int = Field(
        2,
        ge=0,
        description="resubmissions of a batched request that failed (HTTP 429/5xx, a batch "
        "that failed, expired or was cancelled) before it becomes an error record",
        json_schema_extra=_flag("--batch-retries"),
    )
    batch_state: Path | None = Field(
        None,
        description="file recording the submitted batches, so a killed run resumes polling "
        "them instead of paying twice (command line default: RESULTS.batches.json next to "
        "the results file; none: kept in memory only)",
        json_schema_extra=_flag("--batch-state", metavar="FILE"),
    )
    # The rest concern a run over a results file (cigeval evaluate, Evaluator.run): RUN_FILE_FIELDS.
    overwrite: bool = Field(
        False,
        description="start the results file afresh instead of resuming",
        json_schema_extra=_flag("--overwrite"),
    )
    retry_errors: bool = Field(
        False,
        description="rerun samples recorded as error, asking the judge again rather than "
        "reading cached answers (their old records are dropped)",
        json_schema_extra=_flag("--retry-errors"),
    )
    include_trace: bool = Field(
        True,
        description="keep the trace in the records",
        json_schema_extra=_flag("--no-trace", negate=True),
    )
    limit: int | None = Field(
        None,
        ge=0,
        description="only the first N samples of the input (those already recorded count: a "
        "rerun with the same `limit` completes the same N samples)",
        json_schema_extra=_flag("--limit"),
    )
    allow_mixed_settings: bool = Field(
        False,
        description="append to a results file whose records were made with other settings "
        "(else exit 2 naming the settings that differ; reports show them as separate runs)",
        json_schema_extra=_flag("--allow-mixed-settings"),
    )
    recheck_images: bool = Field(
        True,
        description="keep the records of samples already judged without checking whether "
        "their image files changed since (by default a changed image is judged again)",
        json_schema_extra=_flag("--no-recheck-images", negate=True),
    )
    max_text_chars: int = Field(
        20_000,
        ge=1,
        description="a sample with a text field (prompt, instruction...) longer than this "
        "is refused as that sample's error rather than sent to the judge",
        json_schema_extra=_flag("--max-text-chars", metavar="N"),
    )
    on_degraded: Literal["warn", "error"] = Field(
        "warn",
        description="a sample with a sub-question judged without the tool the plan chose: "
        "warn (kept as ok, counted in the summary) or error (an error record saying why)",
        json_schema_extra=_flag("--on-degraded"),
    )
    group_by: str | None = Field(
        None,
        description="the closing summary's mean scores per value of this sample field or "
        "metadata key (task, model, category, seed, metadata.tag; default: per task)",
        json_schema_extra=_flag("--group-by", metavar="FIELD"),
    )
    circuit_breaker: int = Field(
        10,
        ge=0,
        description="stop the run (exit status 3) when N samples in a row fail to reach the "
        "judge for the same reason (connection refused or reset, timeout, HTTP 5xx); they "
        "get no record, so a rerun resumes; 0 turns it off",
        json_schema_extra=_flag("--circuit-breaker", metavar="N"),
    )
    circuit_breaker_s: float = Field(
        20.0,
        gt=0,
        description="also stop the run (exit status 3) when, for this many seconds, no "
        "request reached the judge's server while at least `circuit_breaker` requests "
        "failed to (calls still retrying included); local engine only",
        json_schema_extra=_flag("--circuit-breaker-seconds", metavar="SECONDS"),
    )


#: :class:`RunConfig`'s fields that only a run over a results file reads (``cigeval
#: evaluate``, ``Evaluator.run``): resume or start afresh, retry errors, limit, trace, guards.
RUN_FILE_FIELDS = (
    "overwrite",
    "retry_errors",
    "include_trace",
    "limit",
    "allow_mixed_settings",
    "recheck_images",
    "max_text_chars",
    "on_degraded",
    "group_by",
    "circuit_breaker",
    "circuit_breaker_s",
)

#: The former name of the run-file settings, now :class:`RunConfig`'s :data:`RUN_FILE_FIELDS`:
#: ``RunOptions(overwrite=True, limit=10)`` is the same config as ``RunConfig(...)``.
RunOptions = RunConfig


class EnsembleConfig(BaseModel):
    """How many judgments to make per sample and how to combine them.

    Each model (``--model`` repeated) is asked ``samples_per_model`` times; with more than one
    sample per model the extra ones run at ``temperature`` with seeds ``seed, seed+1, ...`` (from 0
    without ``--seed``) so they differ (and each is cached separately). ``level`` chooses
    whether sub-question scores are combined before the task's aggregate (``sub_question``) or
    final scores (``final``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    samples_per_model: int = Field(
        1,
        ge=1,
        description="judgments per model per sample (the extra ones at `temperature`)",
        json_schema_extra=_flag("--samples-per-model"),
    )
    temperature: float = Field(
        0.7,
        ge=0,
        description="temperature of the extra judgments when `samples_per_model` > 1",
        json_schema_extra=_flag("--ensemble-temperature"),
    )
    combine: str = Field(
        "mean",
        description="how several judgments become one",
        json_schema_extra=_flag("--combine", choices=COMBINE_RULES),
    )
    level: Literal["sub_question", "final"] = Field(
        "sub_question",
        description="combine sub-question scores before aggregating, or final scores",
        json_schema_extra=_flag("--combine-level"),
    )
    grid: float = Field(1.0, gt=0, description="grid step (0-10 scale) of the majority rule")
    prompt_dirs: tuple[str, ...] = Field(
        (),
        description="a prompt variant (template folder) judged by every model; repeatable",
        json_schema_extra=_flag("--prompt-variant", metavar="DIR", repeat=True),
    )

    @field_validator("combine")
    @classmethod
    def _known_rule(cls, value: str) -> str:
        if value not in COMBINE_RULES:
            raise ConfigError(
                f"unknown combine rule {value!r}; choose one of: {', '.join(COMBINE_RULES)}"
            )
        return value


@dataclass(frozen=True)
class JudgeSpec:
    """One judge, as a value: its models (spec strings such as ``openai:NAME@URL`` or
    ``hf:PATH``, or judge objects; several make an ensemble), its settings, how a run calls
    it, how an ensemble combines, and the server of ``openai:`` specs that name none.

    An :class:`~cigeval.evaluation.Evaluator` is built from one, and every Ray worker builds
    its own Evaluator from the same value.
    """

    models: tuple[Any, ...]
    config: EvalConfig = field(default_factory=EvalConfig)
    run_config: RunConfig = field(default_factory=RunConfig)
    ensemble: EnsembleConfig = field(default_factory=EnsembleConfig)
    base_url: str | None = None

    def __post_init__(self) -> None:
        if not self.models:
            raise ConfigError("at least one model is needed")

    @classmethod
    def of(
        cls,
        model: Any,
        *,
        config: EvalConfig | None = None,
        run_config: RunConfig | None = None,
        ensemble: EnsembleConfig | None = None,
        base_url: str | None = None,
    ) -> JudgeSpec:
        """The spec of ``model`` (one model, or a list or tuple of them); unset settings are
        the defaults."""
        return cls(
            models=tuple(model) if isinstance(model, list | tuple) else (model,),
            config=config or EvalConfig(),
            run_config=run_config or RunConfig(),
            ensemble=ensemble or EnsembleConfig(),
            base_url=base_url,
        )
