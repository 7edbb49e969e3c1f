"""Fitting calibrations from human labels (``cigeval calibrate``; scikit-learn on use).

:func:`calibrate_votes` (pairwise judges' votes), :func:`calibrate_imagenhub` (stored judge
outputs and the ImagenHub raters) and :func:`calibrate_labels` (a results file and a CSV of
ratings) each return a :class:`CalibrationResult`: the calibration file
(:class:`cigeval.calibration.Calibration`), its held-out figures with bootstrap intervals and
the predictions behind them. :func:`calibrate` picks one by its arguments. Applying a file
needs none of this: see :mod:`cigeval.calibration`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports

if TYPE_CHECKING:
    from cigeval.meta.calibrate.result import CalibrationResult
    from cigeval.meta.calibrate.run import calibrate
    from cigeval.meta.calibrate.scores import calibrate_imagenhub, calibrate_labels
    from cigeval.meta.calibrate.votes import calibrate_votes

_LAZY = {
    "calibrate": ".run",
    "calibrate_imagenhub": ".scores",
    "calibrate_labels": ".scores",
    "calibrate_votes": ".votes",
    "CalibrationResult": ".result",
}

__all__ = [
    "CalibrationResult",
    "calibrate",
    "calibrate_imagenhub",
    "calibrate_labels",
    "calibrate_votes",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
