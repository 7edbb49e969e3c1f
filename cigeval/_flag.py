"""How a settings field names its command-line flag: ``json_schema_extra=flag("--name")``.

:mod:`cigeval.cli._flags` turns every field so marked into that flag: its type, choices,
default and help come from the field. The field's description describes the field (what
the value means), naming other fields in backquotes (`samples_per_model`); the help text
shows those as their flags.
"""

from __future__ import annotations

from typing import Any


def flag(name: str, **extra: Any) -> dict[str, Any]:
    """``json_schema_extra`` of a field given on the command line as ``name``.

    ``extra`` (read by :mod:`cigeval.cli._flags`): ``metavar``; ``negate=True``, a boolean
    field whose flag turns it off (``--no-cache`` for ``use_cache``; the help reads "do not
    <description>"); ``by_method=True``, the default comes from ``method``; ``repeat=True``,
    a tuple field given by repeating the flag; ``choices``, where the type lists none.
    """
    unknown = set(extra) - {"metavar", "negate", "by_method", "repeat", "choices"}
    if unknown:
        raise TypeError(f"flag {name}: unknown setting(s) {', '.join(sorted(unknown))}")
    return {"flag": name, **extra}
