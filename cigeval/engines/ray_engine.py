"""The Ray engine: samples spread over a Ray cluster with Ray Data, one Evaluator per actor.

Each worker actor builds its own :class:`~cigeval.evaluation.Evaluator` once (its tools
load once per actor, on the actor's GPU when it was given one) and judges the rows it
receives concurrently, through the usual backends. Records come back as JSON text, so the
driver writes them with the usual writer (resume, summary) exactly as the local engine does.

Nothing here imports Ray at module level: ``import cigeval`` stays light, and a missing Ray
is a :class:`~cigeval.errors.MissingDependency` naming ``pip install 'cigeval[ray]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval._caller import command_line, from_command_line, in_callers_words
from cigeval.config import EnsembleConfig, EvalConfig, JudgeSpec, RunConfig
from cigeval.engines._rows import decode_record, decode_row, encode_score
from cigeval.engines.settings import EngineConfig
from cigeval.errors import CigevalError, ConfigError, MissingDependency, PreflightError
from cigeval.evaluation import Evaluator
from cigeval.evaluation._sync import run_sync
from cigeval.tasks.registry import TASKS, register_task

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

#: Environment variables the driver passes on to the workers (in Ray's ``runtime_env``,
#: which Ray writes into its session logs) when they are set: the judge's address and
#: organisation, the offline switches of the Hugging Face hub, and cigeval's own settings
#: (``CIGEVAL_*`` names that do not look like a secret).
FORWARDED_ENV = (
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
)
#: Credentials the workers need and Ray must never log: they travel inside the
#: :class:`WorkerSpec` (an actor's constructor argument, which Ray does not log) and are set
#: in the worker's environment before its Evaluator is built. ``CIGEVAL_*`` names holding
#: ``KEY``, ``TOKEN``, ``SECRET`` or ``PASSWORD`` are treated the same way.
SECRET_ENV = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


class Secrets(dict[str, str]):
    """Environment variables holding credentials; shown as their names only, so no repr,
    log line or error message of Ray's prints a value."""

    def __repr__(self) -> str:
        return f"Secrets({sorted(self)})"

    __str__ = __repr__


def _is_secret(name: str) -> bool:
    return name in SECRET_ENV or (
        name.startswith("CIGEVAL_") and any(word in name for word in _SECRET_WORDS)
    )


def import_ray() -> Any:
    """``ray`` with Ray Data, or MissingDependency naming the extra to install."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
        import ray.data  # the engine needs Ray Data, not only Ray core
    except ImportError:
        engine = in_callers_words("--engine ray", "engine='ray'")
        raise MissingDependency("ray[data]", "ray", f"The Ray engine ({engine})") from None
    return ray


@contextlib.contextmanager
def ray_session(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    log_file: str | os.PathLike[str] | None = None,
) -> Iterator[Any]:
    """Ray, connected for the ``with`` block: to ``address`` when given, else to a Ray
    started on this machine for the block (never to a cluster found by chance).

    A Ray already initialised in this process is used as it is and left running; one started
    or joined here is shut down on exit. ``num_cpus`` caps a local Ray (default: every core).
    With ``log_file`` Ray's own log lines (the driver's, and the workers' output, which Ray
    otherwise copies to this process's stderr) go to that file instead of the terminal.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    with contextlib.ExitStack() as stack:
        if log_file is not None:
            stack.enter_context(_ray_logs_to(Path(log_file)))
        try:
            ray.init(
                address=address or "local",
                num_cpus=num_cpus if not address else None,
                include_dashboard=False if not address else None,
                configure_logging=False,
                log_to_driver=log_file is None,
            )
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
            where = f"the Ray cluster at {address!r}" if address else "a local Ray"
            raise ConfigError(f"could not start or join {where}: {exc}") from exc
        try:
            yield ray
        finally:
            ray.shutdown()


#: Ray's loggers that write to the terminal (Ray gives them handlers of their own at import).
_RAY_LOGGERS = ("ray", "ray.data")


@contextlib.contextmanager
def _ray_logs_to(path: Path) -> Iterator[None]:
    """Ray's Python loggers write to ``path`` (appended) instead of the terminal in the
    block; their own handlers are put back after it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = []
    for name in _RAY_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, list(logger.handlers), logger.propagate))
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, handlers, propagate in saved:
            logger.removeHandler(handler)
            for old in handlers:
                logger.addHandler(old)
            logger.propagate = propagate
        handler.close()


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker actor needs to build its Evaluator, shipped once per actor."""

    judge: JudgeSpec
    base_dir: str | None = None
    tasks: list[Any] = field(default_factory=list)
    setup: Callable[[], None] | None = None
    secrets: Secrets = field(default_factory=Secrets)
    #: Whether the driver runs a ``cigeval`` command: the worker's notes, warnings and advice
    #: then name flags, as the local engine's do.
    from_command_line: bool = False

    def words(self) -> contextlib.AbstractContextManager[None]:
        """The driver's caller's words (:mod:`cigeval._caller`), for a block of this worker."""
        return command_line() if self.from_command_line else contextlib.nullcontext()

    def build(self) -> Evaluator:
        """Set the driver's credentials in this worker's environment, register the driver's
        tasks, run ``setup``, and build the Evaluator."""
        os.environ.update(self.secrets)
        _register_tasks(self.tasks)
        if self.setup is not None:
            self.setup()
        with self.words():
            return Evaluator.from_spec(self.judge)


class EvaluatorWorker:
    """A Ray Data actor: one Evaluator, built once, judging the rows it is given.

    With ``run_config.preflight`` the actor checks its judges and loads its tools in its
    constructor, so weights load once per actor, before its first sample. An actor given
    no GPU hides any from its tools, so they run on the CPU as the scheduler intended.
    """

    def __init__(self, spec: WorkerSpec) -> None:
        import ray

        if not ray.get_gpu_ids():
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
        self.evaluator = spec.build()
        self.words = spec.words
        self.base_dir = spec.base_dir
        self.concurrency = spec.judge.run_config.concurrency
        self._limit: asyncio.Semaphore | None = None
        if spec.judge.run_config.preflight:
            run_sync(_checked(self.evaluator))

    async def __call__(self, batch: pa.Table) -> pa.Table:
        """Judge every row of ``batch`` (at most ``concurrency`` at once per actor)."""
        import pyarrow as pa

        if self._limit is None:
            self._limit = asyncio.Semaphore(self.concurrency)
        limit = self._limit

        async def one(row: dict[str, Any]) -> dict[str, str]:
            item, refresh = decode_row(row, self.base_dir)
            async with limit:
                score = await self.evaluator.evaluate_async(item, refresh_cache=refresh)
            return encode_score(score)

        with self.words():  # the notes in the records in the driver's caller's words
            rows = await asyncio.gather(*(one(row) for row in batch.to_pylist()))
        columns = ("id", "status", "record")
        return pa.table({c: pa.array([r[c] for r in rows], pa.string()) for c in columns})


async def _checked(evaluator: Evaluator) -> list[str]:
    """The evaluator's preflight, closing the connections it opened in this loop."""
    try:
        return await evaluator.preflight_async()
    finally:
        await evaluator.aclose()


def _preflight_task(spec: WorkerSpec, from_cli: bool = False) -> list[str]:
    """Run on one Ray worker: build the Evaluator and check its judges and tools (advice in
    the words of the driver's caller: flags under ``cigeval evaluate``)."""
    with command_line() if from_cli else contextlib.nullcontext():
        result: list[str] = run_sync(_checked(spec.build()))
    return result


def _register_tasks(tasks: list[Any]) -> None:
    for spec in tasks:
        with contextlib.suppress(CigevalError):
            if spec.id in TASKS and TASKS.get(spec.id) == spec:
                continue
        register_task(spec, replace=True)


def _driver_tasks() -> list[Any]:
    """Every task the driver knows (built-in, from files, registered in Python)."""
    specs = []
    for name in TASKS.names():
        with contextlib.suppress(CigevalError):
            specs.append(TASKS.get(name))
    return specs


def default_workers(engine: EngineConfig) -> int:
    """How many worker actors the connected cluster holds (``engine.ray_workers`` if set)."""
    if engine.ray_workers is not None:
        return engine.ray_workers
    import ray

    resources = ray.cluster_resources()
    if engine.ray_gpus_per_worker > 0:
        fits = math.floor(resources.get("GPU", 0) / engine.ray_gpus_per_worker)
        if fits < 1:
            asked = in_callers_words(
                f"--ray-gpus-per-worker {engine.ray_gpus_per_worker:g}",
                f"the {engine.ray_gpus_per_worker:g} GPU(s) per worker asked "
                "(EngineConfig.ray_gpus_per_worker, gpus_per_worker= of evaluate_dataset)",
            )
            raise ConfigError(
                f"the Ray cluster has {resources.get('GPU', 0):g} GPU(s), fewer than {asked}"
            )
        return fits
    return max(1, math.floor(resources.get("CPU", 1) / engine.ray_cpus_per_worker))


def _split_limits(run_config: RunConfig, workers: int) -> RunConfig:
    """Each worker's share of the run's requests- and tokens-per-minute limits."""
    update: dict[str, Any] = {}
    for name in ("requests_per_minute", "tokens_per_minute"):
        value = getattr(run_config, name)
        if value is not None:
            update[name] = value / workers
    return run_config.model_copy(update=update) if update else run_config


def forwarded_env() -> dict[str, str]:
    """The driver's values of :data:`FORWARDED_ENV` and of the ``CIGEVAL_*`` variables that
    are not secrets: what goes into Ray's ``runtime_env`` (never a credential)."""
    return {
        name: value
        for name, value in os.environ.items()
        if (name in FORWARDED_ENV or name.startswith("CIGEVAL_")) and not _is_secret(name)
    }


def driver_secrets() -> Secrets:
    """The driver's credentials (:data:`SECRET_ENV` and secret-looking ``CIGEVAL_*``)."""
    return Secrets({name: value for name, value in os.environ.items() if _is_secret(name)})


def _picklable(spec: WorkerSpec) -> None:
    """ConfigError when the spec (a judge object, ``worker_setup``) cannot reach the workers."""
    from ray import cloudpickle

    try:
        cloudpickle.dumps(spec)
    except Exception as exc:
        raise ConfigError(
            f"the judge or worker_setup cannot be sent to Ray workers ({type(exc).__name__}: "
            f"{str(exc)[:200]}); pass the judge as a spec string (openai:NAME@URL, hf:PATH) "
            "or register your backend in worker_setup"
        ) from None


def preflight_on_ray(spec: WorkerSpec, engine: EngineConfig | None = None) -> list[str]:
    """Check the judges and tools once on a Ray worker with a worker actor's resources.

    Raises :class:`PreflightError` naming the fix, as the local preflight does.
    """

    ray = import_ray()
    engine = engine or EngineConfig()
    task = ray.remote(_preflight_task).options(
        num_cpus=engine.ray_cpus_per_worker,
        num_gpus=engine.ray_gpus_per_worker,
        runtime_env={"env_vars": forwarded_env()},
        max_retries=0,
    )
    try:
        checks: list[str] = ray.get(task.remote(spec, from_command_line()))
        return checks
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, PreflightError):
            raise PreflightError(str(cause)) from None
        if isinstance(cause, CigevalError):
            raise PreflightError(f"a Ray worker could not build the judge: {cause}") from None
        raise


def worker_spec(
    judge: JudgeSpec,
    engine: EngineConfig,
    *,
    base_dir: str | Path | None = None,
    worker_setup: Callable[[], None] | None = None,
) -> WorkerSpec:
    """What every worker actor of ``engine`` gets to judge as ``judge``; ConfigError when
    it cannot be sent.

    Ray must be connected (the worker count, and so each worker's share of the rate limits,
    depends on the cluster).
    """
    if judge.run_config.batch:
        # Each actor would gather only its own share of a stage into its own batches, with
        # several processes writing one batch record: neither the saving nor the resume holds.
        raise ConfigError(
            in_callers_words(
                "--batch and --engine ray cannot be combined: a provider batch gathers the "
                "calls of one process; use --batch on one machine, or --engine ray with direct "
                "calls",
                "RunConfig(batch=True) and the Ray engine cannot be combined: a provider batch "
                "gathers the calls of one process; use batch=True on one machine, or the Ray "
                "engine with batch=False",
            )
        )
    run_config = _split_limits(judge.run_config, default_workers(engine))
    spec = WorkerSpec(
        judge=dataclasses.replace(judge, run_config=run_config),
        base_dir=str(Path(base_dir or Path.cwd()).resolve()),
        tasks=_driver_tasks(),
        setup=worker_setup,
        secrets=driver_secrets(),
        from_command_line=from_command_line(),
    )
    _picklable(spec)
    return spec


def judge_dataset(ds: ray.data.Dataset, spec: WorkerSpec, engine: EngineConfig) -> ray.data.Dataset:
    """``ds`` mapped through a pool of :class:`EvaluatorWorker` actors (lazily)."""
    ray = import_ray()
    count = default_workers(engine)
    # A given worker count is fixed. The default pool starts with one actor and grows with
    # the queued work: actors started up front would hold every CPU, and the read tasks of a
    # dataset read from files would then never run.
    sizes = (
        {"size": count} if engine.ray_workers is not None else {"min_size": 1, "max_size": count}
    )
    # One sample per batch: records stream back as each sample ends and a slow sample never
    # holds others back. Each actor judges ``concurrency`` of them at once (async calls) and
    # has as many queued, so it never waits for the next one (and Ray Data's autoscaler,
    # which scales on queued work, can grow the pool).
    concurrency = spec.judge.run_config.concurrency
    pool = ray.data.ActorPoolStrategy(
        **sizes,
        max_tasks_in_flight_per_actor=2 * concurrency,
        max_concurrent_calls_per_actor=concurrency,
    )
    return ds.map_batches(
        EvaluatorWorker,
        fn_constructor_args=(spec,),
        batch_size=1,
        batch_format="pyarrow",
        compute=pool,
        num_cpus=engine.ray_cpus_per_worker,
        num_gpus=engine.ray_gpus_per_worker,
        runtime_env={"env_vars": forwarded_env()},
        udf_modifying_row_count=False,
    )


def evaluate_dataset(
    ds: ray.data.Dataset,
    model: Any,
    *,
    config: EvalConfig | None = None,
    run_config: RunConfig | None = None,
    ensemble: EnsembleConfig | None = None,
    base_url: str | None = None,
    base_dir: str | Path | None = None,
    workers: int | None = None,
    gpus_per_worker: float = 0.0,
    cpus_per_worker: float = 1.0,
    preflight: bool | None = None,
    worker_setup: Callable[[], None] | None = None,
) -> ray.data.Dataset:
    """Judge every sample of a Ray Dataset on the cluster; a Dataset of records, lazily.

    Each row of ``ds`` is a sample (the fields of a samples-file line; nulls count as absent,
    relative image paths resolve against ``base_dir``, default the current directory). The
    result has one row per sample: ``id``, ``status`` and ``record`` (the results record,
    with its trace, as JSON text: :func:`record_of`). Rows come out as samples finish.

    ``model``, ``config``, ``run_config``, ``ensemble`` and ``base_url`` are those of
    :class:`~cigeval.evaluation.Evaluator`. ``workers`` actors are used (default: a pool
    growing with the work up to what the cluster's CPUs, or GPUs, allow; a fixed count
    that holds every CPU leaves none for reading a dataset from files), each judging
    ``run_config.concurrency`` samples at once with ``gpus_per_worker`` GPUs and
    ``cpus_per_worker`` CPUs reserved; the requests- and tokens-per-minute limits are
    shared out between them. A judge given as an object is copied to every worker (its
    state, e.g. ``ScriptedBackend.requests``, stays there); ``worker_setup`` runs in each
    worker before its Evaluator is built (register your own tools, rubrics or backends
    there). With ``preflight`` (default: ``run_config.preflight``) the judges and tools are
    checked once on a worker before this returns (:class:`PreflightError` names the fix).
    Ray is initialised as Ray Data would when it is not yet; :func:`ray_session` starts a
    private local one instead.
    """
    ray = import_ray()
    if not ray.is_initialized():
        ray.init()
    judge = JudgeSpec.of(
        model, config=config, run_config=run_config, ensemble=ensemble, base_url=base_url
    )
    engine = EngineConfig(
        engine="ray",
        ray_workers=workers,
        ray_gpus_per_worker=gpus_per_worker,
        ray_cpus_per_worker=cpus_per_worker,
    )
    spec = worker_spec(judge, engine, base_dir=base_dir, worker_setup=worker_setup)
    if judge.run_config.preflight if preflight is None else preflight:
        preflight_on_ray(spec, engine)
    return judge_dataset(ds, spec, engine)


def record_of(row: dict[str, Any]) -> dict[str, Any]:
    """The results record (a dict) of a row of :func:`evaluate_dataset`'s output."""
    return decode_record(row)
