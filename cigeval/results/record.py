"""What a results record (``Score.to_record``, one line of a results file) means, read as
plain data: its generator, condition text, images and sub-scores. Whether its score counts
(status, range) is :func:`cigeval.results.run.score_of`.

Nothing here imports cigeval, so the card renderer that ``Score.to_html`` uses can read
records without reaching back to ``Score``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The generator label of a record without a ``model`` field.
NO_GENERATOR = "(no model)"


def generator_of(record: Mapping[str, Any]) -> str:
    """The generator (the ``model`` pass-through field) of a record, or :data:`NO_GENERATOR`."""
    model = record.get("model")
    return NO_GENERATOR if model is None or model == "" else str(model)


def task_of(record: Mapping[str, Any]) -> str:
    """The record's task name ("?" when it names none)."""
    return str(record.get("task", "?"))


def conditions_of(record: Mapping[str, Any]) -> dict[str, str]:
    """The sample's text conditions (prompt, instruction, subject, ...) the record carries."""
    conditions = record.get("conditions")
    if not isinstance(conditions, dict):
        return {}
    return {str(k): str(v) for k, v in conditions.items() if v not in (None, "")}


def sub_scores_of(record: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The record's sub-scores (one per sub-question), leaving out anything not an object."""
    if record is None:
        return []
    return [s for s in record.get("sub_scores") or [] if isinstance(s, dict)]


def degraded_count(record: Mapping[str, Any] | None) -> int:
    """How many sub-questions of a record were judged without the tool the plan chose."""
    return sum(1 for s in sub_scores_of(record) if s.get("degraded"))


def input_images_of(record: Mapping[str, Any]) -> dict[str, str]:
    """The sample's images shown to the judge: role -> sha256."""
    images = record.get("input_images") or {}
    if not isinstance(images, dict):
        return {}
    return {str(role): sha for role, sha in images.items() if isinstance(sha, str)}
