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


def value_at(data: Mapping[str, Any], path: str) -> Any:
    """The value at the dotted ``path`` of ``data`` (``metadata.tag``, ``config.tools``), or
    None where a step of it is missing or no mapping."""
    value: Any = data
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


#: The group of a record that holds nothing under the field grouped by.
NO_VALUE = "(none)"


def group_of(record: Mapping[str, Any], name: str) -> str:
    """The value of the field ``name`` of a record, as a leaderboard's group (``--group-by``):
    a dotted path (``metadata.tag``); else a field of the record (``task``, ``model``,
    ``rubric``); else a key of its ``metadata`` (``category``, ``seed``); else one of its text
    conditions (``subject``); :data:`NO_VALUE` where it has none."""
    value: Any = None
    if "." in name:
        value = value_at(record, name)
    else:
        for place in (record, record.get("metadata"), record.get("conditions")):
            if isinstance(place, Mapping) and place.get(name) is not None:
                value = place[name]
                break
    if value is None or value == "":
        return NO_VALUE
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


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
    return _images(record, "input_images")


def images_not_shown_of(record: Mapping[str, Any]) -> dict[str, str]:
    """The sample's images never sent to the judge (the edit mask): role -> sha256."""
    return _images(record, "images_not_shown")


def _images(record: Mapping[str, Any], key: str) -> dict[str, str]:
    images = record.get(key) or {}
    if not isinstance(images, dict):
        return {}
    return {str(role): sha for role, sha in images.items() if isinstance(sha, str)}


def evidence_box(entry: Any) -> tuple[float, float, float, float] | None:
    """An evidence entry's ``[x0, y0, x1, y1]`` as numbers, or None when it has no usable box
    (not four numbers, or ends before it starts)."""
    box = _numbers(entry.get("box") if isinstance(entry, Mapping) else None, 4)
    if box is None or box[2] < box[0] or box[3] < box[1]:
        return None
    return box[0], box[1], box[2], box[3]


def evidence_frame(entry: Any) -> tuple[int, int] | None:
    """An evidence entry's ``image_size`` (the frame of its box), or None when it has none."""
    size = _numbers(entry.get("image_size") if isinstance(entry, Mapping) else None, 2)
    if size is None or min(size) <= 0:
        return None
    return int(size[0]), int(size[1])


def _numbers(value: Any, count: int) -> tuple[float, ...] | None:
    """``value`` as ``count`` numbers, or None when it is not a list of that many."""
    if not isinstance(value, list | tuple) or len(value) != count:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    return tuple(float(v) for v in value)
