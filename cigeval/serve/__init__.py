"""``cigeval serve``: the agentic judge as a reward service for RL training (docs/serve.md).

The app (:func:`create_app`, FastAPI; an extra: ``pip install 'cigeval[serve]'``) speaks its
own API and the trainers' protocols (UniRL, Flow-GRPO, EditScore); the package
:mod:`cigeval.serve.adapters` holds the reward functions a training script imports
(Flow-GRPO, verl), against a server or in-process. Nothing here is imported by
``import cigeval``.
"""

from __future__ import annotations

from cigeval.serve.settings import ServeConfig, ServeSettings

__all__ = ["ServeConfig", "ServeSettings", "create_app"]


def __getattr__(name: str) -> object:
    if name == "create_app":
        from cigeval.serve.app import create_app

        return create_app
    raise AttributeError(f"module 'cigeval.serve' has no attribute {name!r}")
