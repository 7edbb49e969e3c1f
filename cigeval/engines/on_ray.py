"""The Ray engine of a run: the samples judged by worker actors on a Ray cluster.

The driver (this process) keeps everything a run guarantees (the lock, the writer, the
summary); the workers only judge. Ray is imported when this engine is prepared.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.engines._rows import decode_record, encode_items
from cigeval.engines.ray_engine import (
    WorkerSpec,
    default_workers,
    import_ray,
    judge_dataset,
    preflight_on_ray,
    ray_session,
    worker_spec,
)
from cigeval.engines.settings import EngineConfig
from cigeval.evaluation import Evaluator, SampleInput
from cigeval.score import Score
from cigeval.signals import SIGINT, SIGTERM, Stop, Terminated, raise_on_sigterm


class RayEngine:
    """Judges a run's samples on Ray: started or joined in :meth:`prepare`, left in
    :meth:`close`. The workers build their own Evaluator from ``evaluator``'s
    :class:`~cigeval.config.JudgeSpec`."""

    preflight_label = "preflight on Ray"

    def __init__(self, evaluator: Evaluator, engine: EngineConfig, log_file: Path) -> None:
        self.evaluator = evaluator
        self.engine = engine
        #: Where Ray's own log lines go (unless ``engine.ray_verbose``).
        self.log_file = log_file
        self._stack = contextlib.ExitStack()
        self._ray: Any = None
        self._spec: WorkerSpec | None = None
        self._quiet = False
        self._workers = 1

    def _status(self, message: str) -> None:
        """One line on stderr saying what Ray is doing (its start takes a while)."""
        if not self._quiet:
            print(f"ray: {message}", file=sys.stderr, flush=True)

    def prepare(self, quiet: bool) -> None:
        """Start or join Ray and make the workers' spec."""
        self._quiet = quiet
        address = self.engine.ray_address
        running = import_ray().is_initialized()
        logs = None if self.engine.ray_verbose or running else self.log_file
        started = time.perf_counter()
        if running:
            self._status("using the Ray already running in this process")
        elif address:
            self._status(f"joining the Ray cluster at {address}")
        else:
            self._status("starting a local Ray")
        self._ray = self._stack.enter_context(ray_session(address, log_file=logs))
        _quiet_ray_data(self._ray)
        resources = self._ray.cluster_resources()
        self._status(
            f"cluster ready in {time.perf_counter() - started:.1f} s: "
            f"{resources.get('CPU', 0):g} CPU(s), {resources.get('GPU', 0):g} GPU(s)"
            + (f"; Ray's own logs go to {logs} ({_verbose()} shows them)" if logs else "")
        )
        self._spec = worker_spec(self.evaluator.spec, self.engine)
        self._workers = default_workers(self.engine)

    def preflight(self) -> list[str]:
        """The preflight on one worker, which builds the judge and loads the tools there."""
        assert self._spec is not None, "prepare() first"
        self._status("preflight on a worker (builds the judge and loads the tools there)")
        return preflight_on_ray(self._spec, self.engine)

    def judge(
        self,
        items: Iterable[SampleInput],
        refresh_ids: Collection[str],
        accept: Callable[[Score], bool],
        stop: Stop,
        servers_down: Callable[[], bool] | None = None,
    ) -> None:
        """Send the items to the workers; hand each Score to ``accept`` as it comes back,
        until they run out, ``accept`` returns False, or a signal stops the run.

        ``servers_down`` is not used: the requests are made in the workers, where the run's
        watch cannot see them, so only the breaker's sample rule applies on Ray."""
        assert self._spec is not None, "prepare() first"
        try:
            with raise_on_sigterm():
                rows = encode_items(items, refresh_ids)
                if not rows:
                    return
                self._status(f"starting up to {self._workers} worker(s) for {len(rows)} sample(s)")
                started = time.perf_counter()
                # one block per sample: each goes to whichever worker is free
                samples = self._ray.data.from_items(rows, override_num_blocks=len(rows))
                records = judge_dataset(samples, self._spec, self.engine).iter_rows()
                for count, row in enumerate(records):
                    if count == 0:
                        elapsed = time.perf_counter() - started
                        self._status(f"workers ready: first record back after {elapsed:.1f} s")
                    if not accept(Score.from_record(decode_record(row))):
                        break
        except KeyboardInterrupt:
            stop.request(SIGINT)
        except Terminated:
            stop.request(SIGTERM)

    def batch_stats(self) -> Any:
        """None: the Batch API is not used on Ray."""
        return None

    def close(self) -> None:
        """Leave (or stop) the Ray this engine started or joined."""
        self._stack.close()


def _quiet_ray_data(ray: Any) -> None:
    """No Ray Data progress bars or start-of-execution lines: the run has its own."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def _verbose() -> str:
    """How the caller shows Ray's own logs, in the caller's words."""
    return in_callers_words("--ray-verbose", "EngineConfig(ray_verbose=True)")
