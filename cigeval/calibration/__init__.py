"""Calibration files: read, check against records, apply (numpy only).

``cigeval calibrate`` (:func:`cigeval.calibrate`, fitting in :mod:`cigeval.meta.calibrate`)
learns from human labels how a judge's scores map to people's and how sure each calibrated
score is, and writes a :class:`Calibration` file. This package applies one: it reads and
validates the file (:func:`load_calibration`), refuses records of another judge, rubric,
method, aggregate rule or prompt set (:class:`CalibrationMismatch`), and adds to each scored
record ``"calibrated": {"value": ..., "interval": [lo, hi]}`` (:func:`calibrated_field`,
:func:`calibrate_records`). docs/calibration.md describes the file and the procedure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports

if TYPE_CHECKING:
    from cigeval.calibration.apply import (
        calibrate_records,
        calibrated_field,
        check_binding,
        check_records,
        decide,
    )
    from cigeval.calibration.binding import Binding, CalibrationMismatch, binding_of_record
    from cigeval.calibration.file import (
        FORMAT,
        Calibration,
        StepReport,
        TaskCalibration,
        VotesCalibration,
        load_calibration,
    )

_LAZY = {
    "Binding": ".binding",
    "binding_of_record": ".binding",
    "Calibration": ".file",
    "CalibrationMismatch": ".binding",
    "calibrate_records": ".apply",
    "calibrated_field": ".apply",
    "check_binding": ".apply",
    "check_records": ".apply",
    "decide": ".apply",
    "FORMAT": ".file",
    "load_calibration": ".file",
    "StepReport": ".file",
    "TaskCalibration": ".file",
    "VotesCalibration": ".file",
}

__all__ = [
    "FORMAT",
    "Binding",
    "Calibration",
    "CalibrationMismatch",
    "StepReport",
    "TaskCalibration",
    "VotesCalibration",
    "binding_of_record",
    "calibrate_records",
    "calibrated_field",
    "check_binding",
    "check_records",
    "decide",
    "load_calibration",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
