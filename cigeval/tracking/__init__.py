"""Experiment tracking: a run (or a probe report) logged to Weights & Biases or MLflow
(docs/tracking.md).

- :func:`make_tracker`: a tracker by name (``"wandb"``, ``"mlflow"``) with its options.
- :func:`trackers_for`: what ``track=`` takes (a name, a tracker, or several) as trackers.
- :class:`Tracker`: an end-of-run callback; pass one to ``Evaluator.run(callbacks=[...])``,
  or ``track=`` to :meth:`cigeval.Evaluator.run`.

The trackers' SDKs are optional extras (``cigeval[wandb]``, ``cigeval[mlflow]``), imported
when a tracker is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cigeval.errors import ConfigError
from cigeval.tracking.base import TrackedRun, Tracker, tracker_names


def make_tracker(name: str, **options: Any) -> Tracker:
    """The tracker called ``name`` (``wandb`` or ``mlflow``); ``options`` go to
    :class:`Tracker` (``project``, ``run_name``, ``max_images``, ``report``). Raises
    ConfigError for an unknown name, MissingDependency when its SDK is not installed."""
    key = name.strip().lower()
    if key == "wandb":
        from cigeval.tracking.wandb_tracker import WandbTracker

        return WandbTracker(**options)
    if key == "mlflow":
        from cigeval.tracking.mlflow_tracker import MlflowTracker

        return MlflowTracker(**options)
    raise ConfigError(f"unknown tracker {name!r}; choose one of: {', '.join(tracker_names())}")


def trackers_for(track: str | Tracker | Sequence[str | Tracker] | None) -> list[Tracker]:
    """The trackers of a ``track=`` value: a name, a :class:`Tracker`, or a list of them."""
    if track is None:
        return []
    items = [track] if isinstance(track, str | Tracker) else list(track)
    return [item if isinstance(item, Tracker) else make_tracker(item) for item in items]


__all__ = ["TrackedRun", "Tracker", "make_tracker", "tracker_names", "trackers_for"]
