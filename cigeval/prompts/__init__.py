"""Prompt templates (Jinja2, package data) and a strict renderer."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

BUILTIN_FOLDER = Path(__file__).resolve().parent


@lru_cache(maxsize=16)
def _environment(override: str | None = None) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = [jinja2.FileSystemLoader(str(BUILTIN_FOLDER))]
    if override is not None:
        loaders.insert(0, jinja2.FileSystemLoader(override))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(template: str, /, *, prompt_dir: str | None = None, **variables: Any) -> str:
    """Render ``template`` (a file name in cigeval/prompts) with ``variables``.

    A file of the same name in ``prompt_dir`` takes precedence (prompt variants). Undefined
    variables are an error, so a template and its caller cannot drift apart silently.
    """
    return _environment(prompt_dir).get_template(template).render(**variables).strip()


def render_string(source: str, **variables: Any) -> str:
    """Render a user-supplied template string with the same strict rules."""
    return _environment().from_string(source).render(**variables).strip()
