"""scikit-learn, imported on first use (the optional ``calibrate`` extra)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar, cast

from cigeval.errors import MissingDependency


def sklearn_modules() -> dict[str, ModuleType]:
    """The scikit-learn modules calibration fits with; :class:`MissingDependency` naming the
    ``calibrate`` extra when scikit-learn is not installed."""
    try:
        import sklearn.ensemble
        import sklearn.isotonic
        import sklearn.linear_model
        import sklearn.model_selection
    except ImportError as exc:
        raise MissingDependency(
            exc.name or "scikit-learn", "calibrate", "Calibration (cigeval calibrate)"
        ) from exc
    return {
        "ensemble": sklearn.ensemble,
        "isotonic": sklearn.isotonic,
        "linear_model": sklearn.linear_model,
        "model_selection": sklearn.model_selection,
    }


def one_thread() -> Any:
    """A context in which BLAS and OpenMP use one thread: calibration fits many small
    models, for which threads cost far more than they save (a hundredfold on a busy
    machine)."""
    sklearn_modules()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


F = TypeVar("F", bound=Callable[..., Any])


def in_one_thread(function: F) -> F:
    """Run ``function`` within :func:`one_thread`."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_thread():
            return function(*args, **kwargs)

    return cast(F, wrapper)
