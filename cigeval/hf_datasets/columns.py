"""Which dataset column holds which part of a sample: ``task=category,prompt=caption,...``.

Keys name the parts of a :class:`~cigeval.Sample`:

- ``id``, ``task``: the sample's id (else the row index) and task id (else a fixed task);
- image roles ``output``, ``source``, ``mask``, ``control``, ``ground_truth``, ``subjects``
  and ``outputs`` (lists), ``subject_image`` (the subject reference image: ``subject`` alone
  is the subject's *name*), or any ``images.<role>`` (a role of your own task);
- text fields ``prompt``, ``instruction``, ``subject``, ``concepts``, ``control_type``,
  ``task_indicator`` or a text field your task declares;
- pass-through fields ``model`` (the generator), ``human`` (a human rating), ``metadata``
  (a dict column) and ``metadata.<name>`` (one entry of the metadata).

Values are column names. A mapping comes from ``key=column,...`` text, a JSON or YAML file
of the same mapping, or a dict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError

#: Image roles named without the ``images.`` prefix.
IMAGE_ROLES = ("output", "source", "mask", "control", "ground_truth", "subjects", "outputs")
#: Image roles that hold a list of images.
LIST_ROLES = frozenset({"subjects", "outputs"})


@dataclass(frozen=True)
class ColumnMap:
    """Where each part of a sample is in a dataset row (see the module docstring).

    ``id`` / ``task``: their columns, or None (the row index; a fixed task). ``images``:
    image role -> column. ``fields``: text and pass-through field -> column. ``metadata``:
    metadata entry -> column (``""``: a whole dict column).
    """

    id: str | None = None
    task: str | None = None
    images: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str | Mapping[str, str] | ColumnMap) -> ColumnMap:
        """A mapping from ``key=column,...`` text, the path of a JSON/YAML file holding one,
        or a dict. ConfigError names what is wrong."""
        if isinstance(spec, ColumnMap):
            return spec
        if isinstance(spec, str):
            path = Path(spec)
            if path.suffix.lower() in (".json", ".yaml", ".yml"):
                return cls.from_mapping(_read_file(path))
            return cls.from_mapping(_parse_pairs(spec))
        return cls.from_mapping(spec)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> ColumnMap:
        """A mapping from ``{key: column}`` (keys as in the module docstring)."""
        if not isinstance(mapping, Mapping) or not mapping:
            raise ConfigError("the column mapping is empty: name at least the output column")
        parts: dict[str, Any] = {"images": {}, "fields": {}, "metadata": {}}
        for raw_key, column in mapping.items():
            key = str(raw_key).strip()
            if not isinstance(column, str) or not column.strip():
                raise ConfigError(f"the column mapping gives {key!r} no column name")
            column = column.strip()
            if key in ("id", "task"):
                parts[key] = column
            elif key in IMAGE_ROLES:
                parts["images"][key] = column
            elif key == "subject_image":
                parts["images"]["subject"] = column
            elif key.startswith("images."):
                parts["images"][_suffix(key)] = column
            elif key == "metadata":
                parts["metadata"][""] = column
            elif key.startswith("metadata."):
                parts["metadata"][_suffix(key)] = column
            elif key.isidentifier():
                parts["fields"][key] = column
            else:
                raise ConfigError(f"{key!r} in the column mapping is not a sample field")
        if not parts["images"]:
            raise ConfigError(
                "the column mapping names no image column: give at least output=COLUMN "
                f"(image roles: {', '.join(IMAGE_ROLES)}, subject_image, images.<role>)"
            )
        return cls(**parts)

    def columns(self) -> list[str]:
        """Every column the mapping reads, each once, in a stable order."""
        named = [self.id, self.task, *self.images.values(), *self.fields.values()]
        named += list(self.metadata.values())
        return list(dict.fromkeys(c for c in named if c))

    def check(self, available: list[str]) -> None:
        """ConfigError when a mapped column is not among ``available`` (listing them)."""
        missing = [c for c in self.columns() if c not in available]
        if missing:
            raise ConfigError(
                f"the dataset has no column {', '.join(map(repr, missing))}; its columns: "
                f"{', '.join(available)}"
            )


def _suffix(key: str) -> str:
    name = key.split(".", 1)[1].strip()
    if not name:
        raise ConfigError(f"{key!r} in the column mapping names nothing after the dot")
    return name


def _parse_pairs(text: str) -> dict[str, str]:
    """``a=x,b=y`` -> {"a": "x", "b": "y"}."""
    pairs: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, column = item.partition("=")
        if not sep:
            raise ConfigError(
                f"{item.strip()!r} in {in_callers_words('--columns', 'columns=')} is not "
                "KEY=COLUMN (e.g. task=category,prompt=caption,output=image)"
            )
        pairs[key.strip()] = column.strip()
    return pairs


def _read_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the column mapping {path}: {exc}") from None
    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"the column mapping {path} is not valid: {exc}") from None
