"""The same app on Ray Serve (the ``ray-serve`` extra): ``--replicas N`` copies, each with its
own judge client pool, behind Ray Serve's HTTP proxy; or deployed on an existing cluster."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from cigeval.serve.settings import ServeConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

    from cigeval.config import JudgeSpec


def build_app(spec: JudgeSpec, settings: ServeConfig) -> FastAPI:
    """The app of one replica (run on the replica)."""
    from cigeval.serve.app import create_app
    from cigeval.serve.judge import build_evaluator

    return create_app(
        lambda: build_evaluator(spec, score_mode=settings.score_mode),
        settings,
        preflight=spec.run_config.preflight,
    )


class _Replica:
    """One Ray Serve replica: builds its app (and judge) when the replica starts."""

    def __init__(self, spec: JudgeSpec, settings: ServeConfig) -> None:
        self.spec, self.settings = spec, settings

    def __serve_build_asgi_app__(self) -> FastAPI:
        return build_app(self.spec, self.settings)


def deployment(spec: JudgeSpec, settings: ServeConfig, replicas: int) -> Any:
    """The bound Ray Serve application: ``replicas`` copies of the app."""
    from ray import serve

    replica = serve.deployment(
        name="cigeval", num_replicas=replicas, max_ongoing_requests=max(1, settings.max_queue)
    )(serve.ingress()(_Replica))
    return replica.bind(spec, settings)


def start(
    spec: JudgeSpec,
    settings: ServeConfig,
    replicas: int,
    address: str | None = None,
    *,
    num_cpus: int | None = None,
) -> str:
    """Start (or join) Ray, deploy, and return the proxy's URL."""
    import ray
    from ray import serve

    if not ray.is_initialized():
        ray.init(address=address, num_cpus=num_cpus, include_dashboard=False)
    serve.start(http_options={"host": settings.host, "port": settings.port})
    serve.run(deployment(spec, settings, replicas), name="cigeval", route_prefix="/")
    return f"http://{settings.host}:{settings.port}"


def run_ray_serve(
    spec: JudgeSpec, settings: ServeConfig, replicas: int, address: str | None
) -> int:
    """Serve until interrupted (``cigeval serve --replicas N``)."""
    try:
        from ray import serve
    except ImportError as exc:
        from cigeval.cli._common import UsageError

        raise UsageError(
            f"--replicas needs the ray-serve extra: pip install 'cigeval[ray-serve]' ({exc})"
        ) from None
    url = start(spec, settings, replicas, address)
    print(f"cigeval serve: {replicas} replica(s) on Ray Serve at {url}", file=sys.stderr)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()
    return 0
