"""The settings of ``cigeval serve``: where it listens, who may call it, and its limits."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cigeval._flag import flag
from cigeval.errors import ConfigError

#: Hosts that only this machine can reach.
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


class ServeConfig(BaseModel):
    """How the reward service listens and what it admits. None of it changes a score, except
    ``score_mode`` (``integer``: the paper's score; ``expected``: see docs/serve.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field(
        "127.0.0.1",
        description="address to bind (non-local needs api_key)",
        json_schema_extra=flag("--host"),
    )
    port: int = Field(
        8080, ge=0, le=65535, description="port to bind", json_schema_extra=flag("--port")
    )
    api_key: str | None = Field(
        None,
        repr=False,
        description="bearer token every request must carry (never logged)",
        json_schema_extra=flag("--api-key"),
    )
    concurrency: int = Field(64, ge=1, description="items judged at once")
    max_queue: int = Field(
        1024,
        ge=1,
        description="items admitted at once (judged or waiting); beyond: 429",
        json_schema_extra=flag("--max-queue"),
    )
    deadline_s: float | None = Field(
        None,
        gt=0,
        description="seconds per request; items not judged by then are timeouts",
        json_schema_extra=flag("--deadline-s"),
    )
    max_items: int = Field(
        512, ge=1, description="items in one request", json_schema_extra=flag("--max-items")
    )
    max_body_bytes: int = Field(
        256 * 2**20,
        ge=1,
        description="bytes of one request body",
        json_schema_extra=flag("--max-body-bytes"),
    )
    max_pixels: int = Field(
        4096 * 4096,
        ge=1,
        description="pixels of one image (width x height)",
        json_schema_extra=flag("--max-pixels"),
    )
    image_root: Path | None = Field(
        None,
        description="folder image paths may name (paths refused without it)",
        json_schema_extra=flag("--image-root"),
    )
    accept_pickle: bool = Field(
        False,
        description="accept Flow-GRPO's pickle body at POST / (restricted unpickler)",
        json_schema_extra=flag("--accept-pickle"),
    )
    score_mode: Literal["integer", "expected"] = Field(
        "integer",
        description="integer: the paper's score; expected: probability-weighted",
        json_schema_extra=flag("--score-mode"),
    )
    reward_name: str = Field(
        "cigeval",
        description="the reward's name in UniRL's protocol",
        json_schema_extra=flag("--reward-name"),
    )
    default_task: str = Field(
        "text_guided_ig",
        description="task of UniRL/Flow-GRPO items with one image",
        json_schema_extra=flag("--default-task"),
    )
    edit_task: str = Field(
        "text_guided_ie",
        description="task of UniRL items with a source and an edited image",
        json_schema_extra=flag("--edit-task"),
    )
    retry_after_s: int = Field(
        2, ge=1, description="Retry-After of a 429", json_schema_extra=flag("--retry-after")
    )

    def check_bind(self) -> None:
        """Refuse a bind that other machines can reach unless an API key guards it."""
        if not is_local_host(self.host) and not self.api_key:
            raise ConfigError(
                f"refusing to bind {self.host!r} without --api-key: anyone on the network "
                "could use the judge; give --api-key KEY (or bind 127.0.0.1)"
            )


#: The former name of :class:`ServeConfig`.
ServeSettings = ServeConfig


def is_local_host(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (loopback)."""
    if host in _LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
