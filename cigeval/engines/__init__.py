"""Engines: where a run's samples are judged. ``local`` is the Evaluator in this process;
``ray`` spreads the samples over a Ray cluster (:func:`evaluate_dataset`, ``--engine ray``).
A run reaches either through the :class:`~cigeval.engines.base.Engine` protocol
(:func:`~cigeval.engines.base.engine_for` picks one from an :class:`EngineConfig`).

Nothing here imports Ray until a Ray function runs (``pip install 'cigeval[ray]'``), and the
Ray engine's module loads on first use of its names, so the engine settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports

if TYPE_CHECKING:
    from cigeval.engines.ray_engine import evaluate_dataset, ray_session, record_of
    from cigeval.engines.settings import EngineConfig

#: Each name's module, loaded on first access (the run's signal handling, imported by every
#: command, needs none of them).
_LAZY = {name: ".ray_engine" for name in ("evaluate_dataset", "ray_session", "record_of")}
_LAZY["EngineConfig"] = ".settings"

__all__ = ["EngineConfig", "evaluate_dataset", "ray_session", "record_of"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
