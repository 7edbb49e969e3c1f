"""The FastAPI app of ``cigeval serve``: its own API, UniRL's routes and Flow-GRPO's body.

Routes: ``POST /v1/score`` (own API, schema at ``/openapi.json``), ``GET /v1/info``,
``GET /health`` (also UniRL's), ``POST /score`` and ``GET /rewards`` (UniRL), ``POST /``
(Flow-GRPO's pickle, only with ``accept_pickle``). Every route but ``/health`` needs the
bearer key when one is set. A per-item problem is that item's error: a batch answers 200.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from cigeval._version import __version__
from cigeval.serve.inputs import prepare, sample_of
from cigeval.serve.models import ScoreRequest, ScoreResponse
from cigeval.serve.service import QueueFull, ScoringService, escape
from cigeval.serve.settings import ServeConfig

if TYPE_CHECKING:
    from cigeval.evaluation import Evaluator

log = logging.getLogger("cigeval.serve")

#: Seconds a /health answer is reused (each one asks the judge server).
_HEALTH_TTL_S = 10.0


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, or a 413 as soon as it is known to pass ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Refused(413, f"request body over the server's limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _Refused(413, f"request body over the server's limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _check_key(request: Request, key: str | None) -> None:
    if key is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    ok = scheme.lower() == "bearer" and hmac.compare_digest(
        token.strip().encode("utf-8"), key.encode("utf-8")
    )
    if not ok:
        raise _Refused(401, "missing or wrong bearer key", {"WWW-Authenticate": "Bearer"})


def create_app(
    judge: Evaluator | Callable[[], Evaluator],
    settings: ServeConfig | None = None,
    *,
    preflight: bool = True,
) -> FastAPI:
    """The service's ASGI app around one shared judge.

    ``judge`` is an :class:`~cigeval.Evaluator` or a function building one (called at
    startup, e.g. in each Ray Serve replica). With ``preflight`` the judge's server is
    checked at startup, and a judge that cannot work stops the start.
    """
    settings = settings or ServeConfig()
    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        evaluator = judge if hasattr(judge, "evaluate_async") else judge()
        if preflight:
            await evaluator.preflight_async()  # type: ignore[union-attr]
        state["service"] = ScoringService(evaluator, settings)  # type: ignore[arg-type]
        try:
            yield
        finally:
            await evaluator.aclose()  # type: ignore[union-attr]

    app = FastAPI(
        title="cigeval serve",
        version=__version__,
        description="The CIGEval agentic judge as a reward service (docs/serve.md).",
        lifespan=lifespan,
    )

    def service() -> ScoringService:
        found: ScoringService = state["service"]
        return found

    @app.exception_handler(_Refused)
    async def _refused(_: Request, exc: _Refused) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(QueueFull)
    async def _full(_: Request, exc: QueueFull) -> JSONResponse:
        return JSONResponse(
            {"detail": f"queue full ({exc}); retry later"},
            status_code=429,
            headers={"Retry-After": str(settings.retry_after_s)},
        )

    @app.post(
        "/v1/score",
        response_model=ScoreResponse,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _schema_ref("ScoreRequest")}},
            }
        },
        summary="Judge a batch of items; results in input order",
    )
    async def score(request: Request) -> ScoreResponse:
        _check_key(request, settings.api_key)
        body = _parse(ScoreRequest, await _read_body(request, settings.max_body_bytes))
        _check_count(len(body.items), settings)
        items = [prepare(item, i, settings) for i, item in enumerate(body.items)]
        return await service().score(items)

    @app.get("/v1/info", summary="The judge, method, rubric, settings fingerprint and version")
    async def info(request: Request) -> dict[str, Any]:
        _check_key(request, settings.api_key)
        evaluator = service().evaluator
        return {
            "judge": evaluator.judge_identity,
            "method": getattr(evaluator.config, "method", None),
            "rubric": evaluator.config.rubric,
            "fingerprint": evaluator.fingerprint,
            "version": __version__,
            "score_mode": settings.score_mode,
            "reward": settings.reward_name,
            "concurrency": settings.concurrency,
            "max_queue": settings.max_queue,
            "deadline_s": settings.deadline_s,
            "process": os.getpid(),
        }

    @app.get("/health", summary="Whether the judge's server answers (503 when not)")
    async def health() -> JSONResponse:
        checked = state.get("health")
        if checked is None or time.monotonic() - checked[0] > _HEALTH_TTL_S:
            try:
                await service().evaluator.preflight_async()
                checked = (time.monotonic(), None)
            except Exception as exc:
                checked = (time.monotonic(), escape(f"{type(exc).__name__}: {exc}"))
            state["health"] = checked
        problem = checked[1]
        body = {
            "status": "ok" if problem is None else "unavailable",
            "judge_reachable": problem is None,
            "rewards": {settings.reward_name: ["ready" if problem is None else "down"]},
            "held": service().held,
        }
        if problem is not None:
            body["problem"] = problem
        return JSONResponse(body, status_code=200 if problem is None else 503)

    @app.get("/rewards", summary="UniRL: the reward names served")
    async def rewards(request: Request) -> dict[str, list[str]]:
        _check_key(request, settings.api_key)
        return {"rewards": [settings.reward_name]}

    @app.post("/score", summary="UniRL's scoring route and wire format")
    async def unirl_score(request: Request) -> dict[str, Any]:
        from cigeval.serve.unirl import UniRLBody, prepare_unirl, unirl_answer

        _check_key(request, settings.api_key)
        body = _parse(UniRLBody, await _read_body(request, settings.max_body_bytes))
        _check_count(len(body.requests), settings)
        items = [prepare_unirl(r, i, settings) for i, r in enumerate(body.requests)]
        return unirl_answer(body, await service().score(items), settings)

    @app.post("/", summary="Flow-GRPO's pickle body (only with --accept-pickle)")
    async def flow_grpo(request: Request) -> Response:
        from cigeval.serve.pickle_body import UnsafePickle, dump_outputs, load_flow_grpo_body

        _check_key(request, settings.api_key)
        if not settings.accept_pickle:
            raise _Refused(404, "pickle bodies are off; start the server with --accept-pickle")
        raw = await _read_body(request, settings.max_body_bytes)
        try:
            images, prompts = load_flow_grpo_body(raw)
        except UnsafePickle as exc:
            log.warning("refused a pickle body: %s", exc)
            raise _Refused(400, str(exc)) from None
        _check_count(len(images), settings)
        pairs = enumerate(zip(images, prompts, strict=True))
        items = [sample_of(i, p, img, settings) for i, (img, p) in pairs]
        answer = await service().score(items)
        outputs = [r.score if r.score is not None else math.nan for r in answer.results]
        extra = {
            "status": [r.status for r in answer.results],
            "errors": [r.error for r in answer.results],
        }
        return Response(dump_outputs(outputs, extra), media_type="application/octet-stream")

    _add_schemas(app)
    return app


def _parse(model: Any, raw: bytes) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        raise _Refused(422, f"invalid request body: {problems}") from None


def _check_count(count: int, settings: ServeConfig) -> None:
    if count > settings.max_items:
        raise _Refused(413, f"{count} items in one request; the limit is {settings.max_items}")


def _schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _add_schemas(app: FastAPI) -> None:
    """Put the request models the routes read themselves into the OpenAPI components."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            request_schema = ScoreRequest.model_json_schema(
                ref_template="#/components/schemas/{model}"
            )
            components.update(request_schema.pop("$defs", {}))
            components["ScoreRequest"] = request_schema
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
