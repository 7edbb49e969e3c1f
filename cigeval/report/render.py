"""The report's HTML comes from jinja2 templates (``report/assets/*.j2``) with autoescape on:
every value from a record is escaped by the template engine, never by hand, and a missing
value is an error (strict undefined), not an empty string."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup


@cache
def _environment() -> jinja2.Environment:
    folder = resources.files("cigeval.report").joinpath("assets")
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def template(name: str, **functions: Any) -> jinja2.Template:
    """The compiled template ``assets/<name>`` (compiled once per process); ``functions``
    become names its macros can call (formatters of numbers)."""
    return _environment().get_template(name, globals=functions or None)


def render(name: str, **values: Any) -> Markup:
    """``assets/<name>`` rendered with ``values``; the result is safe HTML (already escaped)."""
    return Markup(template(name).render(**values))


def macro(name: str, macro_name: str, **functions: Any) -> Any:
    """A macro of ``assets/<name>``, callable from Python (its output is safe HTML)."""
    return getattr(template(name, **functions).module, macro_name)
