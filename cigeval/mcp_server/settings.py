"""The settings of ``cigeval mcp``: the transport, where it listens, and which images it reads."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cigeval._caller import in_callers_words
from cigeval._flag import flag

#: Hosts that only this machine can reach: the only ones ``--transport http`` binds.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class McpConfig(BaseModel):
    """How the MCP server talks to its client and what it lets the client name. None of it
    changes a score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    transport: Literal["stdio", "http"] = Field(
        "stdio",
        description="stdio: a client starts the server and talks over its stdin/stdout; "
        "http: the streamable HTTP transport, at `host`, `port` and `path`",
        json_schema_extra=flag("--transport"),
    )
    host: str = Field(
        "127.0.0.1",
        description="address the http transport binds (this machine only: 127.0.0.1, "
        "localhost or ::1)",
        json_schema_extra=flag("--host"),
    )
    port: int = Field(
        8765,
        ge=0,
        le=65535,
        description="port of the http transport",
        json_schema_extra=flag("--port"),
    )
    path: str = Field(
        "/mcp", description="URL path of the http transport", json_schema_extra=flag("--path")
    )
    image_root: Path = Field(
        default_factory=Path.cwd,
        description="folder image paths must lie under, links followed (default: the folder "
        "the server starts in)",
        json_schema_extra=flag("--image-root"),
    )

    @field_validator("host")
    @classmethod
    def _local(cls, host: str) -> str:
        if host not in LOCAL_HOSTS:
            raise ValueError(
                f"cigeval mcp serves this machine only (the judge reads its files and has no "
                f"authentication): {in_callers_words('--host', 'host')} must be one of "
                f"{', '.join(LOCAL_HOSTS)}, not {host!r}"
            )
        return host

    @field_validator("path")
    @classmethod
    def _rooted(cls, path: str) -> str:
        if not path.startswith("/"):
            raise ValueError(
                f"{in_callers_words('--path', 'path')} must start with '/', not {path!r}"
            )
        return path
