"""Command-line flags made from the config models, so no default is written twice.

A config field marked ``json_schema_extra=flag("--name")`` (:func:`cigeval._flag.flag`)
becomes that flag: its type, choices, help text and default come from the field. The help is
the field's description, with the fields it names in backquotes shown as their flags, and
"do not ..." for a flag that turns a boolean field off. Flags the user does not give are
absent from the parsed arguments (``argparse.SUPPRESS``), so the model's own default applies.
"""

from __future__ import annotations

import argparse
import json
import re
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from cigeval.cli._common import UsageError
from cigeval.cli._tasks_files import add_tasks_file_flag, load_tasks_files
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.errors import CigevalError

__all__ = [
    "add_config_flags",
    "add_served_judge_flags",
    "add_tasks_file_flag",  # defined in _tasks_files (no pydantic), kept importable from here
    "build_config",
    "config_values",
    "flag_of",
    "judge_configs",
    "load_tasks_files",
]

#: What a flag's value is called in the help, by type.
_METAVARS: dict[Any, str] = {int: "N", float: "X", Path: "PATH", str: "TEXT"}
#: Prefix of the argparse ``dest`` of config flags: ``config:<Model>:<dotted field path>``.
_DEST = "config:{model}:{path}"


def _extra(field: FieldInfo) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _base_type(annotation: Any) -> tuple[Any, bool]:
    """The annotation without ``| None``, and whether None was allowed."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names; the empty string is the empty list."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _key_value(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _default_text(field: FieldInfo) -> str:
    if _extra(field).get("by_method"):
        return " (default: set by --method)"
    default = field.default
    if default is PydanticUndefined or default is None or field.default_factory is not None:
        return ""
    if isinstance(default, bool):
        return ""
    if isinstance(default, tuple):
        return "" if not default else f" (default: {','.join(map(str, default))})"
    return f" (default: {default})"


def _help(field: FieldInfo, extra: dict[str, Any], flags: dict[str, str]) -> str:
    """The field's description as flag help: `name` of a field with a flag becomes the flag."""
    text = re.sub(
        r"`([\w.]+)`", lambda m: flags.get(m.group(1), m.group(1)), field.description or ""
    )
    if extra.get("negate"):
        text = f"do not {text}"
    return text + _default_text(field)


def _argument(field: FieldInfo, extra: dict[str, Any], flags: dict[str, str]) -> dict[str, Any]:
    """argparse keyword arguments for one field (``flags``: field name -> flag)."""
    base, _ = _base_type(field.annotation)
    options: dict[str, Any] = {
        "default": argparse.SUPPRESS,
        "help": _help(field, extra, flags),
    }
    if "metavar" in extra:
        options["metavar"] = extra["metavar"]
    if base is bool:
        options.update(action="store_const", const=not extra.get("negate", False))
        return options
    options.setdefault("metavar", _METAVARS.get(base, "TEXT"))
    if get_origin(base) is dict:
        options.update(action="append", type=_key_value)
        return options
    if get_origin(base) is tuple:
        if extra.get("repeat"):
            options.update(action="append")
        else:
            options["type"] = _names
        return options
    if get_origin(base) is Literal:
        options["choices"] = list(get_args(base))
    elif "choices" in extra:
        options["choices"] = list(extra["choices"])
    if "choices" in options and "metavar" not in extra:
        del options["metavar"]  # argparse shows the choices instead
    options["type"] = base if base in (int, float, Path) else str
    return options


def _fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, FieldInfo]]:
    """Every (dotted path, field) of ``model`` with a flag, nested models included."""
    found = []
    for name, field in model.model_fields.items():
        base, _ = _base_type(field.annotation)
        if isinstance(base, type) and issubclass(base, BaseModel):
            found += _fields(base, f"{prefix}{name}.")
        elif "flag" in _extra(field):
            found.append((f"{prefix}{name}", field))
    return found


def add_config_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    model: type[BaseModel],
    *,
    skip: Sequence[str] = (),
) -> None:
    """Add a flag for every flagged field of ``model`` (and its nested models)."""
    fields = _fields(model)
    flags = {path: str(_extra(field)["flag"]) for path, field in fields}
    flags.update({path.rsplit(".", 1)[-1]: flag for path, flag in flags.items() if "." in path})
    for path, field in fields:
        if path in skip:
            continue
        extra = _extra(field)
        dest = _DEST.format(model=model.__name__, path=path)
        parser.add_argument(extra["flag"], dest=dest, **_argument(field, extra, flags))


def flag_of(model: type[BaseModel], path: str) -> str:
    """The flag of a field path (``grounding.checkpoint`` -> ``--grounding-checkpoint``)."""
    for found, field in _fields(model):
        if found == path:
            return str(_extra(field)["flag"])
    return path


def config_values(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The values the user gave for ``model``'s flags, as a nested dict of fields."""
    values: dict[str, Any] = {}
    prefix = _DEST.format(model=model.__name__, path="")
    for dest, value in vars(args).items():
        if not dest.startswith(prefix):
            continue
        path = dest[len(prefix) :].split(".")
        target = values
        for part in path[:-1]:
            target = target.setdefault(part, {})
        if isinstance(value, list) and value and isinstance(value[0], tuple):
            value = dict(value)  # KEY=VALUE pairs
        elif isinstance(value, list):
            value = tuple(value)
        target[path[-1]] = value
    return values


def build_config(
    args: argparse.Namespace,
    model: type[BaseModel],
    base: dict[str, Any] | None = None,
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Any:
    """``model`` from the flags given (over ``base``); a bad value is a UsageError."""
    values = {**(base or {}), **config_values(args, model)}
    if convert is not None:
        values = convert(values)
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise UsageError("; ".join(_problem(model, err) for err in exc.errors())) from None
    except (ValueError, CigevalError) as exc:
        raise UsageError(str(exc)) from None


def _problem(model: type[BaseModel], error: Any) -> str:
    """One validation error as ``--flag: message``; a check across several flags (an error
    of the whole model, at no field) has no flag of its own, and its message is told alone."""
    path = ".".join(str(p) for p in error["loc"])
    if not path:
        return str(error["msg"]).removeprefix("Value error, ")
    return f"{flag_of(model, path)}: {error['msg']}"


def add_served_judge_flags(p: argparse.ArgumentParser) -> None:
    """The judge's flags of a command that serves it (``serve``, ``mcp``): ``--model``,
    ``--base-url``, ``--tasks-file`` and the judging and ensembles groups, as in ``evaluate``
    (read back by :func:`judge_configs`)."""
    p.add_argument(
        "--model",
        action="append",
        required=True,
        help="judge model spec as in `cigeval evaluate` (docs/judges.md); repeat for an ensemble",
    )
    p.add_argument("--base-url", help="the judge's server URL, as '@URL' in --model")
    add_tasks_file_flag(p)
    add_config_flags(p.add_argument_group("judging"), EvalConfig)
    add_config_flags(p.add_argument_group("ensembles"), EnsembleConfig)


def judge_configs(
    args: argparse.Namespace, **run_base: Any
) -> tuple[EvalConfig, RunConfig, EnsembleConfig]:
    """The judge's three configs from the flags given (``run_base``: the command's own
    RunConfig defaults); a bad value is a UsageError."""
    return (
        build_config(args, EvalConfig),
        build_config(args, RunConfig, base=run_base),
        build_config(args, EnsembleConfig),
    )
