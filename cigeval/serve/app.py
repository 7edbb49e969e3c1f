"""The FastAPI app of ``cigeval serve``: its own API, UniRL's routes and the pickle bodies.

Routes: ``POST /v1/score`` (own API), ``GET /v1/info``, ``GET /health`` (also UniRL's),
``GET /metrics`` (Prometheus), ``POST /score`` and ``GET /rewards`` (UniRL), ``POST /`` and
``GET /ping`` (Flow-GRPO's and EditScore's pickles, only with ``accept_pickle``),
``/openapi.json`` and ``/docs``. Every route but ``/health`` needs the bearer key when one is
set. A per-item problem is that item's error: a batch answers 200. Each request's body is
read on the event loop and parsed, decoded and checked in a worker thread
(:mod:`cigeval.serve.body`), so the server keeps answering meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from cigeval._caller import in_callers_words
from cigeval._off_loop import off_loop
from cigeval._version import __version__
from cigeval.serve.body import Refused, joined, read_chunks
from cigeval.serve.metrics import MISSING, ServeMetrics
from cigeval.serve.models import ScoreRequest, ScoreResponse
from cigeval.serve.service import QueueFull, ScoringService
from cigeval.serve.settings import ServeConfig

if TYPE_CHECKING:
    from cigeval.evaluation import Evaluator
    from cigeval.serve.inputs import PreparedItem

log = logging.getLogger("cigeval.serve")

#: Seconds a /health answer stands before the judge's server is asked again (beside the
#: answer, which never waits for it).
_HEALTH_TTL_S = 10.0
_JSON = "application/json"


def _check_key(request: Request, key: str | None) -> None:
    if key is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    ok = scheme.lower() == "bearer" and hmac.compare_digest(
        token.strip().encode("utf-8"), key.encode("utf-8")
    )
    if not ok:
        raise Refused(401, "missing or wrong bearer key", {"WWW-Authenticate": "Bearer"})


def _pickle_off() -> str:
    """The 404 of a pickle route on a server that takes no pickle bodies."""
    accept = in_callers_words("--accept-pickle", "accept_pickle=True")
    return f"pickle bodies are off; start the server with {accept}"


def _check_count(count: int, settings: ServeConfig) -> None:
    if count > settings.max_items:
        raise Refused(
            413,
            f"{count} items in one request; the limit is {settings.max_items} "
            f"({in_callers_words('--max-items', 'max_items')})",
        )


def parse_json(chunks: list[bytes]) -> Any:
    """A body's JSON (a 400 :class:`Refused` when it is not JSON)."""
    import orjson

    try:
        return orjson.loads(joined(chunks))
    except orjson.JSONDecodeError as exc:
        raise Refused(400, f"invalid request body: not JSON ({exc})") from None


def _score_body(chunks: list[bytes]) -> tuple[list[Any], bool]:
    data = parse_json(chunks)
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise Refused(422, "invalid request body: expected {'items': [...]}")
    unknown = sorted(set(data) - {"items", "reasoning"})
    if unknown:
        raise Refused(422, f"invalid request body: unknown field(s) {unknown}")
    if not data["items"]:
        raise Refused(422, "invalid request body: 'items' is empty")
    reasoning = data.get("reasoning", False)
    if not isinstance(reasoning, bool):
        raise Refused(422, "invalid request body: 'reasoning' must be true or false")
    return data["items"], reasoning


def _prepared(raws: list[Any], settings: ServeConfig) -> tuple[list[PreparedItem], None]:
    from cigeval.serve.inputs import prepare_raw

    return [prepare_raw(raw, index, settings) for index, raw in enumerate(raws)], None


def _unirl_prepared(raws: list[Any], settings: ServeConfig) -> tuple[list[Any], list[list[str]]]:
    from cigeval.serve.unirl import prepare_unirl_raw

    pairs = [prepare_unirl_raw(raw, index, settings) for index, raw in enumerate(raws)]
    return [item for item, _ in pairs], [names for _, names in pairs]


def _json(model: Any) -> Response:
    return Response(model.model_dump_json(), media_type=_JSON)


def create_app(
    judge: Evaluator | Callable[[], Evaluator],
    settings: ServeConfig | None = None,
    *,
    preflight: bool = True,
) -> FastAPI:
    """The service's ASGI app around one shared judge.

    ``judge`` is an :class:`~cigeval.Evaluator` or a function building one (called at
    startup, e.g. in each Ray Serve replica). With ``preflight`` the judge's server is
    checked at startup, and a judge that cannot work stops the start; under
    ``--score-mode expected`` the judge must return log-probabilities; then, unless
    ``settings.warmup`` is off, one sample is judged end to end (:mod:`cigeval.serve.warmup`).
    """
    settings = settings or ServeConfig()
    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        from cigeval.serve.warmup import check_logprobs, warm_up

        evaluator = judge if hasattr(judge, "evaluate_async") else judge()
        try:
            if preflight:
                await evaluator.preflight_async()  # type: ignore[union-attr]
                state["health"] = (time.monotonic(), None)
            if settings.score_mode == "expected":
                await check_logprobs(evaluator)  # type: ignore[arg-type]
            service = ScoringService(evaluator, settings)  # type: ignore[arg-type]
            state["service"] = service
            if settings.warmup:
                started = time.perf_counter()
                await warm_up(service)
                log.info("warmed up in %.2f s", time.perf_counter() - started)
            yield
        finally:
            await evaluator.aclose()  # type: ignore[union-attr]

    app = FastAPI(
        title="cigeval serve",
        version=__version__,
        description="The CIGEval agentic judge as a reward service (docs/serve.md).",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    def service() -> ScoringService:
        found: ScoringService = state["service"]
        return found

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        if exc.status not in (401, 404):
            service().metrics.refusal(exc.status)
        return JSONResponse({"detail": exc.message}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(QueueFull)
    async def _full(_: Request, exc: QueueFull) -> JSONResponse:
        service().metrics.refusal(429)
        return JSONResponse(
            {"detail": f"queue full ({exc}); retry later"},
            status_code=429,
            headers={"Retry-After": str(settings.retry_after_s)},
        )

    async def judged(
        request: Request, raws: list[Any], prepare: Callable[..., Any], protocol: str, **kw: Any
    ) -> tuple[ScoreResponse, Any]:
        """Admit ``raws``, prepare them off the loop (``prepare`` returns the items and
        what goes with them, or None), judge them: the answer, and what went with the items."""
        arrived = request.state.arrived
        if len(raws) <= settings.max_queue:  # a batch past the queue is told about that
            _check_count(len(raws), settings)
        with service().admitted(len(raws)):
            items, extra = await off_loop(prepare, raws, settings)
            answer = await service().judge(items, arrived=arrived, protocol=protocol, **kw)
        return answer, extra

    app.add_middleware(_Arrival)

    @app.post(
        "/v1/score",
        response_model=ScoreResponse,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {_JSON: {"schema": _schema_ref("ScoreRequest")}},
            }
        },
        summary="Judge a batch of items; results in input order",
    )
    async def score(request: Request) -> Response:
        _check_key(request, settings.api_key)
        chunks = await read_chunks(request, settings.max_body_bytes)
        raws, reasoning = await off_loop(_score_body, chunks)
        answer, _ = await judged(request, raws, _prepared, "v1", reasoning=reasoning)
        return _json(answer)

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
            "max_items": settings.max_items,
            "deadline_s": settings.deadline_s,
            "fill_unscored": settings.fill_unscored,
            "cache": bool(evaluator.run_config.use_cache),
            "process": os.getpid(),
        }

    async def check_judge() -> None:
        try:
            await service().evaluator.preflight_async()
            state["health"] = (time.monotonic(), None)
        except Exception as exc:
            state["health"] = (time.monotonic(), f"{type(exc).__name__}: {exc}")

    @app.get("/health", summary="Whether the judge's server answers (503 when not)")
    async def health() -> JSONResponse:
        checked = state.get("health")
        if checked is None:
            await check_judge()
        elif time.monotonic() - checked[0] > _HEALTH_TTL_S:
            # answered from the last check at once; the next check runs beside it
            running = state.get("health_check")
            if running is None or running.done():
                state["health_check"] = asyncio.ensure_future(check_judge())
        problem = state["health"][1]
        body = {
            "status": "ok" if problem is None else "unavailable",
            "judge_reachable": problem is None,
            "rewards": {settings.reward_name: ["ready" if problem is None else "down"]},
            "held": service().held,
        }
        if problem is not None:
            body["problem"] = problem
        return JSONResponse(body, status_code=200 if problem is None else 503)

    @app.get("/metrics", summary="Prometheus metrics: items, judge calls, queue, ties, fill-ins")
    async def metrics(request: Request) -> Response:
        _check_key(request, settings.api_key)
        found: ServeMetrics = service().metrics
        if not found.available:
            return Response(MISSING, status_code=404, media_type="text/plain")
        body, content_type = found.exposition()
        return Response(body, media_type=content_type)

    @app.get("/rewards", summary="UniRL: the reward names served")
    async def rewards(request: Request) -> dict[str, list[str]]:
        _check_key(request, settings.api_key)
        return {"rewards": [settings.reward_name]}

    @app.post("/score", summary="UniRL's scoring route and wire format")
    async def unirl_score(request: Request) -> Response:
        from cigeval.serve.unirl import parse_requests, unirl_answer

        _check_key(request, settings.api_key)
        chunks = await read_chunks(request, settings.max_body_bytes)
        raws = await off_loop(lambda: parse_requests(parse_json(chunks)))
        answer, wanted = await judged(request, raws, _unirl_prepared, "unirl")
        return JSONResponse(unirl_answer(wanted, answer, settings))

    @app.post("/", summary="Flow-GRPO's and EditScore's pickle bodies (--accept-pickle)")
    async def pickled(request: Request) -> Response:
        from cigeval.serve.pickle_body import dump_answer
        from cigeval.serve.pickle_routes import (
            pickle_answer,
            prepare_pickle_batch,
            read_pickle_batch,
        )

        _check_key(request, settings.api_key)
        if not settings.accept_pickle:
            raise Refused(404, _pickle_off())
        chunks = await read_chunks(request, settings.max_body_bytes)
        protocol, entries = await off_loop(lambda: read_pickle_batch(joined(chunks), settings))

        def prepare(raws: list[Any], config: ServeConfig) -> tuple[list[Any], Any]:
            batch = prepare_pickle_batch(protocol, raws, config)
            return batch.items, batch

        reasoning = protocol == "editscore"  # its protocol carries the reasoning
        answer, batch = await judged(request, entries, prepare, protocol, reasoning=reasoning)
        body = await off_loop(lambda: dump_answer(pickle_answer(batch, answer, settings)))
        return Response(body, media_type="application/octet-stream")

    @app.get("/ping", summary="EditScore's client's liveness check (--accept-pickle)")
    async def ping(request: Request) -> dict[str, str]:
        _check_key(request, settings.api_key)
        if not settings.accept_pickle:
            raise Refused(404, _pickle_off())
        return {"status": "ok"}

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_schema(request: Request) -> JSONResponse:
        _check_key(request, settings.api_key)
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        from fastapi.openapi.docs import get_swagger_ui_html

        _check_key(request, settings.api_key)
        return get_swagger_ui_html(openapi_url="/openapi.json", title="cigeval serve")

    _add_schemas(app)
    return app


class _Arrival:
    """Notes when each request arrived (``request.state.arrived``, ``time.monotonic()``),
    before its body is read: the deadline runs from there."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {})["arrived"] = time.monotonic()
        await self.app(scope, receive, send)


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
