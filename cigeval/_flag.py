"""How a settings field names its command-line flag: ``json_schema_extra=flag("--name")``.

:mod:`cigeval.cli._flags` turns every field so marked into that flag: its type, choices,
default and help come from the field. The field's description describes the field (what
the value means), naming other fields in backquotes (`samples_per_model`); the help text
shows those as their flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def flag(
    name: str,
    *,
    metavar: str | None = None,
    negate: bool = False,
    by_method: bool = False,
    repeat: bool = False,
    choices: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``json_schema_extra`` of a field given on the command line as ``name``.

    ``negate``: a boolean field whose flag turns it off (``--no-cache`` for ``use_cache``;
    the help reads "do not <description>"). ``by_method``: the default comes from
    ``--method``. ``repeat``: a tuple field given by repeating the flag. ``choices``: the
    values allowed where the field's type does not list them.
    """
    extra: dict[str, Any] = {"flag": name}
    if metavar is not None:
        extra["metavar"] = metavar
    if negate:
        extra["negate"] = True
    if by_method:
        extra["by_method"] = True
    if repeat:
        extra["repeat"] = True
    if choices is not None:
        extra["choices"] = tuple(choices)
    return extra
