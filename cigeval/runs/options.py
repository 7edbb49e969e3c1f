"""How a run treats its results file: resume or start afresh, retry errors, how many samples.

These settings never change an answer; each names its ``cigeval evaluate`` flag, from which
the command line builds the flag (as for :class:`~cigeval.config.RunConfig`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cigeval._flag import flag


class RunOptions(BaseModel):
    """The options of one run over a results file (``cigeval evaluate``, ``Evaluator.run``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    overwrite: bool = Field(
        False,
        description="start the results file afresh instead of resuming",
        json_schema_extra=flag("--overwrite"),
    )
    retry_errors: bool = Field(
        False,
        description="rerun samples recorded as error, asking the judge again rather than "
        "reading cached answers (their old records are dropped)",
        json_schema_extra=flag("--retry-errors"),
    )
    include_trace: bool = Field(
        True,
        description="keep the trace in the records",
        json_schema_extra=flag("--no-trace", negate=True),
    )
    limit: int | None = Field(
        None,
        ge=0,
        description="only the first N samples of the input (those already recorded count: a "
        "rerun with the same `limit` completes the same N samples)",
        json_schema_extra=flag("--limit"),
    )
    allow_mixed_settings: bool = Field(
        False,
        description="append to a results file whose records were made with other settings "
        "(else exit 2 naming the settings that differ; reports show them as separate runs)",
        json_schema_extra=flag("--allow-mixed-settings"),
    )
    recheck_images: bool = Field(
        True,
        description="keep the records of samples already judged without checking whether "
        "their image files changed since (by default a changed image is judged again)",
        json_schema_extra=flag("--no-recheck-images", negate=True),
    )
    max_text_chars: int = Field(
        20_000,
        ge=1,
        description="a sample with a text field (prompt, instruction...) longer than this "
        "is refused as that sample's error rather than sent to the judge",
        json_schema_extra=flag("--max-text-chars", metavar="N"),
    )
    on_degraded: Literal["warn", "error"] = Field(
        "warn",
        description="a sample with a sub-question judged without the tool the plan chose: "
        "warn (kept as ok, counted in the summary) or error (an error record saying why)",
        json_schema_extra=flag("--on-degraded"),
    )
    circuit_breaker: int = Field(
        10,
        ge=0,
        description="stop the run (exit status 3) when N samples in a row fail to reach the "
        "judge for the same reason (connection refused or reset, timeout, HTTP 5xx); they "
        "get no record, so a rerun resumes; 0 turns it off",
        json_schema_extra=flag("--circuit-breaker", metavar="N"),
    )
    circuit_breaker_s: float = Field(
        20.0,
        gt=0,
        description="also stop the run (exit status 3) when, for this many seconds, no "
        "request reached the judge's server while at least `circuit_breaker` requests "
        "failed to (calls still retrying included); local engine only",
        json_schema_extra=flag("--circuit-breaker-seconds", metavar="SECONDS"),
    )
