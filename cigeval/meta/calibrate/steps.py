"""The learned steps of a score calibration, in the order they are tried (a module that
imports nothing, for the ``calibrate`` command's ``--skip`` choices)."""

from __future__ import annotations

STEPS = ("aggregation", "jury", "map", "tie_band")
