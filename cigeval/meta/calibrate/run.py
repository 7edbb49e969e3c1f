"""``cigeval.calibrate(...)``: one entry point for the three kinds of labels."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cigeval.errors import InputError
from cigeval.meta.calibrate.result import CalibrationResult


def calibrate(
    scores: str | Path | Sequence[str | Path] | None = None,
    labels: str | Path | None = None,
    *,
    votes: str | Path | None = None,
    split: str | Path | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> CalibrationResult:
    """Learn a calibration from human labels, as ``cigeval calibrate`` does.

    - ``votes="pairs.jsonl"``: several pairwise judges' votes with the human vote
      (:func:`~cigeval.meta.calibrate.calibrate_votes`);
    - ``scores=[...]`` without ``labels``: stored judge outputs against the ImagenHub raters,
      on ``split`` (e.g. the official ``test_40p.json``) or seeded k-fold
      (:func:`~cigeval.meta.calibrate.calibrate_imagenhub`);
    - ``scores=[...]`` with ``labels="labels.csv"`` (``id,rating``): your own results
      (:func:`~cigeval.meta.calibrate.calibrate_labels`).

    ``options`` pass on (``level``, ``folds``, ``seed``, ``n_boot``, ``skip``, ...). ``out``
    writes the calibration file. Returns a :class:`CalibrationResult` (``.calibration``,
    ``.heldout``, ``.predictions``)::

        result = cigeval.calibrate(["gpt4o_0shot.tsv"], split="test_40p.json")
        result.heldout["coverage"], result.calibration.save("cal.json")
    """
    from cigeval.meta.calibrate.scores import calibrate_imagenhub, calibrate_labels
    from cigeval.meta.calibrate.votes import calibrate_votes

    if votes is not None:
        if scores is not None or labels is not None:
            raise InputError("give votes=..., or scores=... (with or without labels=...)")
        result = calibrate_votes(votes, **options)
    else:
        if scores is None:
            raise InputError("nothing to calibrate: give scores=... or votes=...")
        paths = [scores] if isinstance(scores, str | Path) else list(scores)
        if labels is not None:
            if split is not None:
                raise InputError("split= applies to ImagenHub labels; labels= use k-fold")
            result = calibrate_labels(paths, labels, **options)
        else:
            result = calibrate_imagenhub(paths, split, **options)
    if out is not None:
        result.calibration.save(out)
    return result
