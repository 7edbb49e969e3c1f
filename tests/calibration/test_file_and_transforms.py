"""The calibration file's functions against scikit-learn, and the file's own checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cigeval.calibration import load_calibration
from cigeval.calibration.transforms import aggregate, monotone_map, softmin, step_lookup
from cigeval.errors import InputError


def test_softmin_runs_from_min_to_mean() -> None:
    values = np.array([[0.2, 0.8, 0.5], [0.4, np.nan, 0.6]])
    assert softmin(values, 1e-4) == pytest.approx([0.2, 0.4], abs=1e-3)
    assert softmin(values, 1e4) == pytest.approx([0.5, 0.5], abs=1e-3)
    middle = softmin(values, 0.1)
    assert np.all((middle > [0.2, 0.4]) & (middle < [0.5, 0.5]))
    assert aggregate(values, {"rule": "min"}).tolist() == [0.2, 0.4]
    weighted = {"rule": "weighted", "weights": [1.0, 0.0, 1.0], "intercept": 0.1}
    assert aggregate(values[:1], weighted) == pytest.approx([0.8])


def test_the_stored_map_is_what_isotonic_regression_predicts() -> None:
    sklearn = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 300)
    y = np.clip(x**2 + rng.normal(0, 0.1, 300), 0, 1)
    model = sklearn.IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(x, y)
    table = {"x": model.X_thresholds_.tolist(), "y": model.y_thresholds_.tolist()}
    probe = np.linspace(-0.2, 1.2, 57)
    assert monotone_map(probe, table) == pytest.approx(model.predict(probe))
    assert step_lookup(np.array([-1, 0, 0.5, 0.99, 2]), [0, 0.5, 1], [1, 2, 3]).tolist() == [
        1,
        1,
        2,
        2,
        3,
    ]


def test_a_foreign_or_damaged_file_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(InputError, match="not a cigeval calibration file"):
        load_calibration(path)
    path.write_text(json.dumps({"format": "cigeval-calibration/9"}))
    with pytest.raises(InputError, match="cigeval-calibration/1"):
        load_calibration(path)
    path.write_text(json.dumps({"format": "cigeval-calibration/1", "kind": "scores"}))
    with pytest.raises(InputError, match="cigeval_version"):
        load_calibration(path)
