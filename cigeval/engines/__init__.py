"""Engines: where a run's samples are judged. ``local`` is the Evaluator in this process;
``ray`` spreads the samples over a Ray cluster (:func:`evaluate_dataset`, ``--engine ray``).

Nothing here imports Ray until a Ray function runs (``pip install 'cigeval[ray]'``).
"""

from cigeval.engines.ray_engine import evaluate_dataset, ray_session, record_of
from cigeval.engines.settings import EngineConfig

__all__ = ["EngineConfig", "evaluate_dataset", "ray_session", "record_of"]
