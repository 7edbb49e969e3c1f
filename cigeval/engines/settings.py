"""Where a run's samples are judged: this process (``local``) or a Ray cluster (``ray``).

None of these settings changes an answer: the records are the same either way.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cigeval._flag import flag


class EngineConfig(BaseModel):
    """The engine of a run and, for ``ray``, how the samples are spread over the cluster."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    engine: Literal["local", "ray"] = Field(
        "local",
        description="where samples are judged: local (this process) or ray (worker actors on "
        "a Ray cluster, each with its own tools and judge clients; pip install 'cigeval[ray]')",
        json_schema_extra=flag("--engine"),
    )
    ray_address: str | None = Field(
        None,
        description="the Ray cluster to join (e.g. auto, or ray://head:10001); default: start "
        "a Ray on this machine for the run",
        json_schema_extra=flag("--ray-address", metavar="ADDR"),
    )
    ray_workers: int | None = Field(
        None,
        ge=1,
        description="worker actors, each judging as many samples at once as the run's "
        "concurrency (default: as many as the cluster's CPUs, or GPUs with "
        "`ray_gpus_per_worker`, allow)",
        json_schema_extra=flag("--ray-workers"),
    )
    ray_gpus_per_worker: float = Field(
        0.0,
        ge=0,
        description="GPUs reserved per worker actor; its tools (GroundingDINO) run on it",
        json_schema_extra=flag("--ray-gpus-per-worker"),
    )
    ray_cpus_per_worker: float = Field(
        1.0,
        gt=0,
        description="CPUs reserved per worker actor",
        json_schema_extra=flag("--ray-cpus-per-worker"),
    )
    ray_verbose: bool = Field(
        False,
        description="show Ray's own log lines on the terminal (default: they go to "
        "RESULTS.ray.log next to the results file)",
        json_schema_extra=flag("--ray-verbose"),
    )
