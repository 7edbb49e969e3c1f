"""The thresholds that decide whether a probe passed, all on the 0-1 score scale."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cigeval._flag import flag


class ProbeConfig(BaseModel):
    """How far scores must move (or may move) for a probe to pass.

    Scores are compared on the 0-1 scale: a sample's score as it is, a sub-question's score
    mapped from its own scale (0-10 -> /10, 1-7 -> (s - 1) / 6). Each field names its
    ``cigeval probe`` flag.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    drop_margin: float = Field(
        0.1,
        ge=0,
        le=1,
        description="a 'must drop' score must fall by at least this much (0-1 scale; 0.1 = one "
        "point of 10)",
        json_schema_extra=flag("--drop-margin"),
    )
    hold_tolerance: float = Field(
        0.1,
        ge=0,
        le=1,
        description="a 'must hold' score may move by at most this much, and a 'must not drop' "
        "score may fall by at most this much (0-1 scale)",
        json_schema_extra=flag("--hold-tolerance"),
    )
    min_spread: float = Field(
        0.3,
        ge=0,
        le=1,
        description="the scores of a task's clearly different outputs must span at least this "
        "much, highest minus lowest (0-1 scale)",
        json_schema_extra=flag("--min-spread"),
    )


#: The former name of :class:`ProbeConfig`.
ProbeSettings = ProbeConfig
