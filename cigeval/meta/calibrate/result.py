"""What a ``cigeval calibrate`` command returns: the file, the held-out figures, the
predictions they were computed from, and notes on what was left out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cigeval._version import __version__
from cigeval.calibration.file import Calibration
from cigeval.errors import InputError


@dataclass
class CalibrationResult:
    """A fitted calibration (``calibration``), its held-out figures (``heldout``, fractions,
    with ``intervals``), one prediction per held-out item (per split for votes) and notes."""

    calibration: Calibration
    heldout: dict[str, Any]
    predictions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``{"heldout": {...}}``: the figures, and each step kept or rejected with why."""
        steps = [
            {"step": s.step, "kept": s.kept, "reason": s.reason} for s in self.calibration.steps
        ]
        return {"heldout": {**self.heldout, "steps": steps}}

    def write_predictions(self, path: str | Path) -> None:
        """One JSON line per prediction."""
        try:
            with Path(path).open("w", encoding="utf-8") as handle:
                for row in self.predictions:
                    handle.write(json.dumps(row) + "\n")
        except OSError as exc:
            raise InputError(f"cannot write predictions to {path}: {exc}") from exc

    def summary(self) -> str:
        """A few lines for the terminal: the steps and the main held-out figures."""
        lines = [self.calibration.describe()]
        for step in self.calibration.steps:
            lines.append(f"  {step.step}: {'kept' if step.kept else 'rejected'} ({step.reason})")
        names = ("best_single", "jury", "calibrated", "coverage", "wtl_before", "wtl_after")
        for name in (*names, "accuracy_before", "accuracy_after"):
            value = self.heldout.get(name)
            if isinstance(value, float):
                interval = (self.heldout.get("intervals") or {}).get(name)
                shown = f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""
                lines.append(f"  held-out {name}: {value:.4f}{shown}")
        return "\n".join(lines)


def created_now() -> str:
    """The creation time recorded in a file (UTC, seconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def version() -> str:
    """The cigeval version recorded in a file."""
    return __version__
