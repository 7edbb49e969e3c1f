"""The settings of ``cigeval serve``: where it listens, who may call it, and its limits."""

from __future__ import annotations

import ipaddress
import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cigeval._caller import in_callers_words
from cigeval._flag import flag
from cigeval.errors import ConfigError

#: Hosts that only this machine can reach.
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}
#: The default body limit: a batch of 256 images of 1024 x 1024 sent as base64 JPEG at
#: quality 95, each up to 576 KiB as a file (a detailed, noisy picture of that size is
#: 450-570 KiB at quality 95 and 110-165 KiB at 75), so 768 KiB as base64: 192 MiB.
DEFAULT_MAX_BODY_BYTES = 256 * 768 * 1024
#: The named ways of filling in a reward the judge did not give (``--fill-unscored``).
FILL_MODES = ("nan", "group-mean")


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
        description="items admitted at once over all requests (judged or waiting); a batch "
        "that would pass it waits outside (429, Retry-After); one larger than it is a 413",
        json_schema_extra=flag("--max-queue"),
    )
    deadline_s: float | None = Field(
        None,
        gt=0,
        description="seconds from a request's arrival; items not judged by then are timeouts",
        json_schema_extra=flag("--deadline-s"),
    )
    max_items: int = Field(
        512, ge=1, description="items in one request", json_schema_extra=flag("--max-items")
    )
    max_body_bytes: int = Field(
        DEFAULT_MAX_BODY_BYTES,
        ge=1,
        description="bytes of one request body (the default fits 256 base64 JPEGs of 1024^2)",
        json_schema_extra=flag("--max-body-bytes"),
    )
    max_pixels: int = Field(
        4096 * 4096,
        ge=1,
        description="pixels of one image (width x height)",
        json_schema_extra=flag("--max-pixels"),
    )
    max_image_bytes: int = Field(
        64 * 2**20,
        ge=1,
        description="bytes of one image file (an --image-root file is checked before it is "
        "read); the command line's --max-image-bytes sets it",
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
    fill_unscored: str = Field(
        "nan",
        description="the reward of an item the judge gave no score: nan (none; the default), "
        "group-mean (the mean of its group's scores in the batch, else of the batch's) or a "
        "number; for trainers that cannot take a NaN (docs/serve.md)",
        json_schema_extra=flag("--fill-unscored", metavar="nan|group-mean|VALUE"),
    )
    reasoning: bool = Field(
        False,
        description="return the judge's reasoning with every answer (the own API also takes "
        "'reasoning': true per request)",
        json_schema_extra=flag("--reasoning"),
    )
    warmup: bool = Field(
        True,
        description="warm up at start: one sample judged end to end before serving",
        json_schema_extra=flag("--no-warmup", negate=True),
    )

    @field_validator("fill_unscored")
    @classmethod
    def _fill_mode(cls, value: str) -> str:
        text = value.strip().lower()
        if text in FILL_MODES:
            return text
        try:
            number = float(text)
        except ValueError:
            raise ValueError(
                f"{_fill()} takes nan, group-mean or a number, not {value!r}"
            ) from None
        if not math.isfinite(number):
            raise ValueError(f"{_fill()}: {value!r} is not a finite number")
        return repr(number)

    @model_validator(mode="after")
    def _queue_holds_a_batch(self) -> ServeConfig:
        if self.max_queue < self.max_items:
            queue, items = self.max_queue, self.max_items
            raise ValueError(
                in_callers_words(
                    f"--max-queue {queue} is below --max-items {items}",
                    f"max_queue={queue} is below max_items={items}",
                )
                + f": a batch of {items} items could never be admitted; give "
                + in_callers_words(f"--max-queue at least {items}", f"max_queue >= {items}")
                + " (docs/serve.md, 'Sizing the queue')"
            )
        return self

    def check_bind(self) -> None:
        """Refuse a bind that other machines can reach unless an API key guards it."""
        if not is_local_host(self.host) and not self.api_key:
            key = in_callers_words("--api-key", "api_key")
            give = in_callers_words("--api-key KEY", "api_key='KEY'")
            bind = in_callers_words("bind 127.0.0.1", "host='127.0.0.1'")
            raise ConfigError(
                f"refusing to bind {self.host!r} without {key}: anyone on the network "
                f"could use the judge; give {give} (or {bind})"
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


def _fill() -> str:
    """The fill-in setting, in the caller's words."""
    return in_callers_words("--fill-unscored", "fill_unscored")
