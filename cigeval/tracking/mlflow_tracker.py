"""MLflow: ``--track mlflow`` / ``track="mlflow"``.

One MLflow run per cigeval run, in the experiment named by ``project``: the settings as
params (dotted names), the fingerprint and judges as tags, the figures as metrics, and as
artifacts the records table (``records.json``, MLflow's table format), the results file, the
summary JSON and the HTML report. The tracking store is MLflow's own setting
(``MLFLOW_TRACKING_URI``: a server, or ``file:DIR``, which MLflow 3 accepts only with
``MLFLOW_ALLOW_FILE_STORE=true``). ``mlflow`` (or ``mlflow-skinny``) is an optional extra
(``pip install 'cigeval[mlflow]'``), imported on use.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError, MissingDependency
from cigeval.tracking.base import TrackedRun, Tracker, flatten
from cigeval.tracking.content import metric_name

#: MLflow's limits: characters of a param value, params or tags per call, metrics per call.
MAX_PARAM_CHARS, MAX_PARAMS_PER_CALL, MAX_METRICS_PER_CALL = 6000, 100, 1000
#: Artifact folders, by the kind :meth:`TrackedRun.log_file` gets.
FOLDERS = {"results": "results", "report": "report"}


def mlflow_sdk() -> ModuleType:
    """The ``mlflow`` package, or MissingDependency naming the extra to install."""
    try:
        import mlflow
    except ImportError:
        raise MissingDependency(
            "mlflow", "mlflow", in_callers_words("--track mlflow", "track='mlflow'")
        ) from None
    return mlflow


class MlflowTracker(Tracker):
    """Logs runs and probe reports to MLflow (see the module docstring)."""

    name = "mlflow"

    def check(self) -> None:
        """The SDK is installed and the tracking store answers."""
        self._sdk = mlflow_sdk()
        try:
            self._client = self._sdk.tracking.MlflowClient()
            self._client.search_experiments(max_results=1)
        except Exception as exc:
            raise ConfigError(
                f"MLflow cannot use the tracking store {self._sdk.get_tracking_uri()!r}: "
                f"{str(exc)[:400]}"
            ) from None

    def _open(self, name: str, config: dict[str, Any], job: str) -> TrackedRun:
        client = self._client
        experiment = client.get_experiment_by_name(self.project)
        experiment_id = (
            experiment.experiment_id if experiment else client.create_experiment(self.project)
        )
        tags = {"cigeval.job": job, "cigeval.version": str(config.get("cigeval_version", ""))}
        if config.get("fingerprint"):
            tags["cigeval.fingerprint"] = str(config["fingerprint"])
        run = client.create_run(experiment_id, run_name=name, tags=tags)
        tracked = _MlflowRun(self._sdk, client, run.info.run_id)
        tracked.log_params(config)
        return tracked


class _MlflowRun(TrackedRun):
    def __init__(self, sdk: ModuleType, client: Any, run_id: str) -> None:
        self.sdk = sdk
        self.client = client
        self.run_id = run_id

    def log_params(self, config: dict[str, Any]) -> None:
        entities = self.sdk.entities
        params = [
            entities.Param(_param_key(key), _param_value(value))
            for key, value in flatten(config).items()
        ]
        for start in range(0, len(params), MAX_PARAMS_PER_CALL):
            self.client.log_batch(self.run_id, params=params[start : start + MAX_PARAMS_PER_CALL])

    def log_figures(self, figures: dict[str, float]) -> None:
        now = int(time.time() * 1000)
        metrics = [
            self.sdk.entities.Metric(key, value, now, 0) for key, value in sorted(figures.items())
        ]
        for start in range(0, len(metrics), MAX_METRICS_PER_CALL):
            batch = metrics[start : start + MAX_METRICS_PER_CALL]
            self.client.log_batch(self.run_id, metrics=batch)

    def log_summary(self, summary: dict[str, Any]) -> None:
        self.client.log_dict(self.run_id, summary, "summary.json")

    def log_table(
        self, columns: list[str], rows: list[list[Any]], images: list[dict[str, Path]]
    ) -> None:
        import pandas as pd

        frame = pd.DataFrame(rows, columns=columns)
        roles = sorted({role for files in images for role in files})
        for role in roles:  # where the images the judge saw are (the report shows them)
            frame[f"{role}_image"] = [str(files.get(role, "")) or None for files in images]
        self.client.log_table(self.run_id, data=frame, artifact_file="records.json")

    def log_file(self, path: Path, kind: str) -> None:
        self.client.log_artifact(self.run_id, str(path), FOLDERS.get(kind, kind))

    def close(self, failed: bool) -> None:
        self.client.set_terminated(self.run_id, status="FAILED" if failed else "FINISHED")


def _param_key(key: str) -> str:
    return "/".join(metric_name(part) for part in key.split("/"))[:250]


def _param_value(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 3] + "..."
