"""The ``cigeval serve`` command: the judge as a reward service (docs/serve.md)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from cigeval.cli._common import UsageError, add_calibration, add_calibration_flags
from cigeval.cli._flags import (
    add_config_flags,
    add_served_judge_flags,
    build_config,
    config_values,
    judge_configs,
)
from cigeval.cli._tasks_files import load_tasks_files
from cigeval.config import RUN_FILE_FIELDS, JudgeSpec, RunConfig
from cigeval.errors import CigevalError
from cigeval.serve.settings import ServeConfig

#: Where the API key is read from when ``--api-key`` is not given (keeps it out of ``ps``).
API_KEY_ENV = "CIGEVAL_SERVE_API_KEY"
#: Items judged at once unless ``--concurrency`` says otherwise: a trainer's batch of 64.
DEFAULT_CONCURRENCY = 64


def configure_serve_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``serve``: the judge (as in ``evaluate``), then the service's own."""
    p.usage = "cigeval serve --model MODEL [--host H --port P --api-key KEY] [options]"
    p.description = (
        "Serve the judge over HTTP for RL training: POST /v1/score (own API), UniRL's "
        "/score and /rewards, Flow-GRPO's pickle body (--accept-pickle). Binds 127.0.0.1 "
        f"unless --host says otherwise, which needs --api-key (or ${API_KEY_ENV})."
    )
    add_served_judge_flags(p)
    running = p.add_argument_group("running")
    add_config_flags(
        running, RunConfig, skip=("image_dir", "batch_state", "use_cache", *RUN_FILE_FIELDS)
    )
    cache = running.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache",
        action="store_true",
        default=False,
        help="keep a response cache (off by default: RL images never repeat, so it would only "
        "grow); --cache-dir says where",
    )
    cache.add_argument(
        "--no-cache", dest="cache", action="store_false", help="no response cache (the default)"
    )
    s = p.add_argument_group("service")
    add_config_flags(s, ServeConfig)
    s.add_argument(
        "--replicas",
        type=int,
        default=0,
        help="serve N replicas on Ray Serve (the ray-serve extra) instead of one process",
    )
    s.add_argument(
        "--ray-address",
        help="an existing Ray cluster to deploy on (with --replicas; default: a local Ray)",
    )
    add_calibration_flags(s)


def build_settings(args: argparse.Namespace, run_config: RunConfig) -> ServeConfig:
    """The service settings from the flags; the key from $CIGEVAL_SERVE_API_KEY if not given."""
    base: dict[str, object] = {
        "concurrency": run_config.concurrency,
        "api_key": os.environ.get(API_KEY_ENV) or None,
    }
    if "max_image_bytes" in config_values(args, RunConfig):  # else the service's own default
        base["max_image_bytes"] = run_config.max_image_bytes
    settings: ServeConfig = build_config(args, ServeConfig, base=base)
    try:
        settings.check_bind()
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    return settings


def _log_to_stderr() -> None:
    """The service's own messages (warm-up, refused pickles) on stderr, beside uvicorn's."""
    logger = logging.getLogger("cigeval.serve")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("cigeval serve: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a message comes."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def run_serve(args: argparse.Namespace) -> int:
    """The ``serve`` command."""
    try:
        import uvicorn

        from cigeval.serve.app import create_app
    except ImportError as exc:
        raise UsageError(
            f"cigeval serve needs the serve extra: pip install 'cigeval[serve]' ({exc})"
        ) from None
    load_tasks_files(args)
    config, run_config, ensemble = judge_configs(
        args, concurrency=DEFAULT_CONCURRENCY, image_dir=None, use_cache=args.cache
    )
    settings = build_settings(args, run_config)
    if run_config.batch:
        raise UsageError("--batch does not apply to a service (answers are needed at once)")
    spec = JudgeSpec.of(
        args.model, config=config, run_config=run_config, ensemble=ensemble, base_url=args.base_url
    )
    if args.replicas:
        if args.calibration is not None:
            raise UsageError("--calibration applies to one process; leave out --replicas")
        from cigeval.serve.ray_app import run_ray_serve

        return run_ray_serve(spec, settings, args.replicas, args.ray_address)
    from cigeval.serve.judge import build_evaluator

    # The app runs the preflight itself at startup (so a later outage is not remembered).
    try:
        evaluator = build_evaluator(spec, score_mode=settings.score_mode)
        add_calibration(args, evaluator)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
    app = create_app(evaluator, settings, preflight=run_config.preflight)
    _log_to_stderr()
    host, port = settings.host, settings.port
    where = f"http://{host}:{port}"
    print(f"cigeval serve: judging with {evaluator.judge_identity} on {where}", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
    return 0
