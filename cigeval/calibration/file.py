"""The calibration file: what ``cigeval calibrate`` learned, measured and refused, as JSON.

One versioned object (``format: "cigeval-calibration/1"``):

- ``binding``: the judge(s), rubric, method, aggregate rule and prompt set it was fitted for
  (:class:`~cigeval.calibration.binding.Binding`); records made another way are refused;
- ``tasks``: per task (``"*"`` for any task), the learned functions
  (:class:`TaskCalibration`: each judge's aggregation, the jury, the monotone map, the
  interval bounds, the tie band); ``votes``: the four-way decision of a jury of pairwise
  judges (:class:`VotesCalibration`);
- ``steps``: each step tried, kept or rejected, with the reason and its held-out figures;
  ``heldout``: the before/after figures with their bootstrap intervals;
- ``data``: the fingerprint of the judge outputs and labels it was fitted on, the split, the
  sources; ``procedure``: how it was fitted, in words.

Reading checks the format and every field (:func:`load_calibration`), so a damaged or
foreign file is an :class:`~cigeval.errors.InputError` naming the file and the problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cigeval.calibration.binding import Binding
from cigeval.errors import InputError

#: The format this version writes; files of another major version are refused.
FORMAT = "cigeval-calibration/1"
#: The key of the functions used for a task the file has none of its own for.
ANY_TASK = "*"


class TaskCalibration(BaseModel):
    """The learned functions of one task (see :mod:`cigeval.calibration.transforms`).

    ``judges``: each judge's aggregation rule (``{"rule": "min"}`` is the paper's, read from
    the record's own score); ``jury``: weights over the judges (None: the first judge alone);
    ``map``: the monotone map's knots (None: the score as it is); ``interval``: the interval
    bounds as step functions of the pre-map score; ``tie_band``: two calibrated values this
    close count as a tie; ``n_train``: labelled items it was fitted on.
    """

    model_config = ConfigDict(extra="forbid")

    judges: list[dict[str, Any]]
    jury: dict[str, Any] | None = None
    map: dict[str, list[float]] | None = None
    interval: dict[str, list[float]] | None = None
    tie_band: float = 0.0
    n_train: int = 0


class VotesCalibration(BaseModel):
    """A four-way decision from several judges' pairwise votes: a multinomial logistic model
    over one-hot votes (``coef``: classes x features, features judge by judge, each judge's
    labels then "no vote"), fitted with the regularisation ``C`` chosen on the train side,
    on the pairs as given or also with their candidates swapped (``symmetric``).
    ``use`` is ``jury`` when the model was kept, else ``best_single``: the stock behaviour,
    the vote of the judge most accurate on the labels (``best_single``)."""

    model_config = ConfigDict(extra="forbid")

    judges: list[str]
    labels: list[str]
    classes: list[str]
    coef: list[list[float]]
    intercept: list[float]
    C: float
    symmetric: bool = False
    best_single: str | None = None
    use: Literal["jury", "best_single"] = "jury"


class StepReport(BaseModel):
    """One learned step: kept or rejected, why, what the train side chose and its held-out
    figures (each ``{"value", "interval"}``; ``gain`` is after minus before)."""

    model_config = ConfigDict(extra="forbid")

    step: str
    kept: bool
    reason: str
    chosen: dict[str, Any] = Field(default_factory=dict)
    heldout: dict[str, Any] = Field(default_factory=dict)


class Calibration(BaseModel):
    """A calibration file in memory (see the module docstring for each field)."""

    model_config = ConfigDict(extra="forbid")

    format: str = FORMAT
    kind: Literal["scores", "votes"]
    cigeval_version: str
    created: str
    binding: Binding
    dimension: str = "score"
    level: float = 0.9
    scale: tuple[float, float] = (0.0, 1.0)
    tasks: dict[str, TaskCalibration] = Field(default_factory=dict)
    votes: VotesCalibration | None = None
    steps: list[StepReport] = Field(default_factory=list)
    heldout: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)
    procedure: str = ""
    abstain_width: float | None = None
    source: str | None = Field(None, exclude=True)

    def task(self, task: str) -> TaskCalibration | None:
        """The functions for ``task`` (its own, else the any-task ones, else None)."""
        return self.tasks.get(task) or self.tasks.get(ANY_TASK)

    @property
    def rejected(self) -> list[StepReport]:
        """The steps tried and not kept (the stock behaviour stands for each)."""
        return [s for s in self.steps if not s.kept]

    def describe(self) -> str:
        """One line: what it is bound to and which steps it keeps."""
        kept = [s.step for s in self.steps if s.kept] or ["none"]
        return (
            f"{self.kind} calibration for {', '.join(self.binding.judges)} "
            f"(rubric {self.binding.rubric}, prompt set {self.binding.prompt_set}); "
            f"steps kept: {', '.join(kept)}"
        )

    def to_json(self) -> str:
        """The file's text (indented JSON, a final newline)."""
        return json.dumps(self.model_dump(mode="json"), indent=1) + "\n"

    def save(self, path: str | Path) -> None:
        """Write the file; an :class:`InputError` naming the path when it cannot be written."""
        try:
            Path(path).write_text(self.to_json(), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write calibration file {path}: {exc}") from exc


def load_calibration(source: str | Path | Calibration | dict[str, Any]) -> Calibration:
    """A calibration from a file path, its parsed JSON, or as it is; an :class:`InputError`
    naming the file and the problem when it is not a calibration file of this format."""
    if isinstance(source, Calibration):
        return source
    where = "calibration"
    if isinstance(source, dict):
        data: Any = source
    else:
        where = str(source)
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"cannot read calibration file {source}: {exc}") from None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith(
        "cigeval-calibration/"
    ):
        raise InputError(f"{where}: not a cigeval calibration file (no 'format' of one)")
    if data["format"] != FORMAT:
        raise InputError(
            f"{where}: format {data['format']!r}; this cigeval reads {FORMAT!r} (refit it with "
            "`cigeval calibrate`)"
        )
    try:
        calibration = Calibration.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{where}: {place}: {first['msg']}") from None
    calibration.source = where
    return calibration
