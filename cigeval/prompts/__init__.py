"""Prompt templates (Jinja2, package data) and a strict renderer."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    folder = Path(__file__).resolve().parent
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(template: str, **variables: Any) -> str:
    """Render ``template`` (a file name in cigeval/prompts) with ``variables``.

    Undefined variables are an error, so a template and its caller cannot drift apart silently.
    """
    return _environment().get_template(template).render(**variables).strip()


def render_string(source: str, **variables: Any) -> str:
    """Render a user-supplied template string with the same strict rules."""
    return _environment().from_string(source).render(**variables).strip()
