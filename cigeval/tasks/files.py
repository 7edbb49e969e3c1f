"""Tasks defined in a JSON or YAML file (``--tasks-file``), turned into registered TaskSpecs.

The file holds ``{"tasks": [...]}``, one object per task::

    {"tasks": [{
        "id": "logo_edit", "title": "Logo editing",
        "text_fields": ["instruction"], "image_roles": ["source", "output"],
        "sub_questions": [{
            "id": "logo_kept", "question": "Is the logo still legible and unchanged?",
            "images": ["source", "output"], "condition": "instruction",
            "rules": "Score from 0 to 10 how well the logo of the first image survives ..."
        }]
    }]}

``rules`` is the scoring-rules text the judge reads, or the path (relative to the file) of a
template file holding it. Optional keys: ``optional_text_fields``, ``optional_image_roles``,
``image_labels`` (role -> how the judge is told what the image is), ``processed_condition``,
and per sub-question ``query_field`` (the text field whose value is the Grounding query).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cigeval._regular_file import MAX_TEXT_FILE_BYTES, read_regular
from cigeval._validation_text import validation_problems
from cigeval.errors import ConfigError
from cigeval.tasks.registry import register_task
from cigeval.tasks.spec import SubQuestion, TaskSpec

#: Ids, field names and roles must be identifiers (they become JSON keys and prompt names).
_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: A ``rules`` value with one of these endings names a template file.
_TEMPLATE_SUFFIXES = (".j2", ".jinja", ".txt", ".md")


class _SubQuestionEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_IDENTIFIER)
    question: str = Field(min_length=1)
    images: list[str] = Field(min_length=1)
    condition: str | None = None
    rules: str = Field(min_length=1)
    query_field: str | None = None


class _TaskEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_IDENTIFIER)
    title: str = Field(min_length=1)
    text_fields: list[str] = Field(default_factory=list)
    optional_text_fields: list[str] = Field(default_factory=list)
    image_roles: list[str] = Field(min_length=1)
    optional_image_roles: list[str] = Field(default_factory=list)
    image_labels: dict[str, str] = Field(default_factory=dict)
    processed_condition: bool = False
    sub_questions: list[_SubQuestionEntry] = Field(min_length=1)

    @field_validator("text_fields", "optional_text_fields", "image_roles", "optional_image_roles")
    @classmethod
    def _identifiers(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not re.match(_IDENTIFIER, n)]
        if bad:
            raise ValueError(f"names must be identifiers (letters, digits, _): {bad}")
        return names


class _TaskFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[_TaskEntry] = Field(min_length=1)


def _read(path: Path) -> Any:
    try:
        text = read_regular(path, MAX_TEXT_FILE_BYTES).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read tasks file {path}: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # pragma: no cover - pyyaml is a dependency
            raise ConfigError("YAML tasks files need PyYAML: pip install pyyaml") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"tasks file {path} is not valid YAML: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"tasks file {path} is not valid JSON: {exc}") from None


def _rules_text(value: str, folder: Path, where: str) -> str:
    if "\n" not in value and value.strip().endswith(_TEMPLATE_SUFFIXES):
        template = (folder / value.strip()).resolve()
        try:
            return read_regular(template, MAX_TEXT_FILE_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{where}: cannot read the rules file {template}: {exc}") from None
    return value


def _query_from(field_name: str) -> Any:
    def query(sample: Any) -> str | None:
        value = getattr(sample, field_name, None)
        return str(value) if value else None

    return query


def _spec(entry: _TaskEntry, folder: Path, where: str) -> TaskSpec:
    roles = {*entry.image_roles, *entry.optional_image_roles}
    fields = {*entry.text_fields, *entry.optional_text_fields}
    questions = []
    for number, item in enumerate(entry.sub_questions, start=1):
        place = f"{where}, sub-question {number} ({item.id})"
        unknown_roles = [r for r in item.images if r not in roles]
        if unknown_roles:
            raise ConfigError(f"{place}: images {unknown_roles} are not among the task's roles")
        for name, value in (("condition", item.condition), ("query_field", item.query_field)):
            if value is not None and value not in fields:
                raise ConfigError(f"{place}: {name} {value!r} is not one of the task's text fields")
        questions.append(
            SubQuestion(
                id=item.id,
                question=item.question,
                image_roles=tuple(item.images),
                condition_field=item.condition,
                rules=_rules_text(item.rules, folder, place),
                default_query=_query_from(item.query_field) if item.query_field else None,
            )
        )
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{where}: sub-question ids must be distinct, got {ids}")
    return TaskSpec(
        id=entry.id,
        title=entry.title,
        text_fields=tuple(entry.text_fields),
        optional_text_fields=tuple(entry.optional_text_fields),
        image_roles=tuple(entry.image_roles),
        optional_image_roles=tuple(entry.optional_image_roles),
        image_labels=dict(entry.image_labels),
        processed_condition=entry.processed_condition,
        sub_questions=tuple(questions),
    )


def read_tasks_file(path: str | Path) -> list[TaskSpec]:
    """The tasks a JSON/YAML file defines, validated (ConfigError naming file and task)."""
    path = Path(path)
    raw = _read(path)
    try:
        parsed = _TaskFile.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc, "file")
        raise ConfigError(f"tasks file {path}: {problems}") from None
    return [
        _spec(entry, path.resolve().parent, f"tasks file {path}, task {entry.id!r}")
        for entry in parsed.tasks
    ]


def load_tasks_file(path: str | Path, *, replace: bool = False) -> list[TaskSpec]:
    """Read a tasks file and register its tasks; returns them.

    Loading the same file twice re-registers identical definitions without complaint; a task
    id that clashes with a different registered task needs ``replace=True``.
    """
    from cigeval.tasks.registry import TASKS

    specs = read_tasks_file(path)
    for spec in specs:
        # Equality ignores default_query callables, which differ between two loads.
        same = spec.id in TASKS and TASKS.get(spec.id) == spec
        register_task(spec, replace=replace or same)
    return specs
