"""The ``cigeval mcp`` command: the judge as an MCP server for agents (docs/mcp.md)."""

from __future__ import annotations

import argparse
import sys

from cigeval.cli._common import UsageError, add_calibration_flags, make_evaluator
from cigeval.cli._flags import add_config_flags, add_served_judge_flags, build_config, judge_configs
from cigeval.cli._tasks_files import load_tasks_files
from cigeval.config import RUN_FILE_FIELDS, RunConfig
from cigeval.errors import CigevalError
from cigeval.mcp_server.settings import McpConfig


def configure_mcp_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``mcp``: the judge (as in ``evaluate``), then the server's own."""
    p.usage = "cigeval mcp --model MODEL [--transport stdio|http] [--image-root DIR] [options]"
    p.description = (
        "Serve the judge to MCP clients (Claude Code, Cursor, any agent): the tools "
        "judge_image, list_tasks and probe_judge, over stdio (the client starts this command) "
        "or streamable HTTP on this machine. Image paths must lie under --image-root (default: "
        "the current folder). Nothing but the protocol is written to stdout."
    )
    add_served_judge_flags(p)
    add_config_flags(
        p.add_argument_group("running"),
        RunConfig,
        skip=("image_dir", "batch_state", "batch", *RUN_FILE_FIELDS),
    )
    add_config_flags(p.add_argument_group("server"), McpConfig)
    add_calibration_flags(p.add_argument_group("calibration"))


def run_mcp(args: argparse.Namespace) -> int:
    """The ``mcp`` command: serves until the client (stdio) or a signal (http) ends it."""
    try:
        from cigeval.mcp_server.server import build_server, serve
    except ImportError as exc:
        raise UsageError(
            f"cigeval mcp needs the mcp extra: pip install 'cigeval[mcp]' ({exc})"
        ) from None
    from cigeval.mcp_server.images import ImageRoot
    from cigeval.mcp_server.tools import JudgeTools

    load_tasks_files(args)
    config, run_config, ensemble = judge_configs(args, image_dir=None)
    settings: McpConfig = build_config(args, McpConfig)
    try:
        root = ImageRoot(settings.image_root, run_config.max_image_bytes)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    # the preflight runs with the first judgement, so a judge started later still serves; a
    # calibration file fitted for another judge is refused here
    evaluator = make_evaluator(args, config, run_config, ensemble)
    server = build_server(JudgeTools(evaluator, root), settings)
    where = (
        "stdio"
        if settings.transport == "stdio"
        else f"http://{settings.host}:{settings.port}{settings.path}"
    )
    print(
        f"cigeval mcp: judging with {evaluator.judge_identity} on {where}; image root "
        f"{root.folder}",
        file=sys.stderr,
    )
    serve(server, settings)
    return 0
