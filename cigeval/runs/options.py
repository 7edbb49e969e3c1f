"""How a run treats its results file: resume or start afresh, retry errors, how many samples.

These settings never change an answer; each names its ``cigeval evaluate`` flag, from which
the command line builds the flag (as for :class:`~cigeval.config.RunConfig`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RunOptions(BaseModel):
    """The options of one run over a results file (``cigeval evaluate``, ``Evaluator.run``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    overwrite: bool = Field(
        False,
        description="start --out afresh instead of resuming",
        json_schema_extra={"flag": "--overwrite"},
    )
    retry_errors: bool = Field(
        False,
        description="rerun samples recorded as error, asking the judge again rather than "
        "reading cached answers (their old records are dropped)",
        json_schema_extra={"flag": "--retry-errors"},
    )
    include_trace: bool = Field(
        True,
        description="leave the trace out of the records",
        json_schema_extra={"flag": "--no-trace", "negate": True},
    )
    limit: int | None = Field(
        None,
        ge=0,
        description="evaluate at most N samples",
        json_schema_extra={"flag": "--limit"},
    )
