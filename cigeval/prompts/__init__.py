"""Prompt templates (Jinja2, package data) and a strict renderer."""

from __future__ import annotations

import hashlib
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from cigeval._regular_file import MAX_TEXT_FILE_BYTES, read_regular

BUILTIN_FOLDER = Path(__file__).resolve().parent
#: The suffix of template files.
TEMPLATE_SUFFIX = ".j2"
#: The suffixes of every template file: Jinja2, and the exact-text ones of
#: :mod:`cigeval.prompts.exact`.
_SUFFIXES = (TEMPLATE_SUFFIX, ".txt")


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


def has_template(template: str, prompt_dir: str | None = None) -> bool:
    """Whether ``template`` exists, built in or in ``prompt_dir``."""
    try:
        _environment(prompt_dir).get_template(template)
    except jinja2.TemplateNotFound:
        return False
    return True


def render_string(source: str, **variables: Any) -> str:
    """Render a user-supplied template string with the same strict rules."""
    return _environment().from_string(source).render(**variables).strip()


#: How long a computed templates hash is trusted before the files are looked at again
#: (listed and stat-ed), in seconds: a run asks for it several times per sample.
SIGNATURE_TTL_S = 1.0
_recent: dict[str | None, tuple[float, str]] = {}


def templates_sha256(prompt_dir: str | os.PathLike[str] | None = None) -> str:
    """sha256 (hex) of the templates a run renders: the built-in ones, with the files of the
    same name in ``prompt_dir`` taking their place, plus any other template there.

    Recorded with every result and part of every cache key, so an answer to other prompts is
    never reused and a record says which prompts produced it. The folders are listed again
    at most once every :data:`SIGNATURE_TTL_S` seconds (an edited template counts for the
    samples that start after that), and files are hashed again only when their size or
    modification time changes.
    """
    key = None if prompt_dir is None else str(prompt_dir)
    now = time.monotonic()
    recent = _recent.get(key)
    if recent is not None and now - recent[0] < SIGNATURE_TTL_S:
        return recent[1]
    files = {p.name: p for p in BUILTIN_FOLDER.glob("*") if p.suffix in _SUFFIXES}
    if prompt_dir is not None:
        folder = Path(prompt_dir).expanduser()
        if folder.is_dir():
            files.update(
                {p.name: p for p in folder.glob("*") if p.suffix in _SUFFIXES and p.is_file()}
            )
    signature = []
    for name in sorted(files):
        try:
            stat = files[name].stat()
        except OSError:
            continue
        signature.append((name, str(files[name]), stat.st_size, stat.st_mtime_ns))
    digest = _hash_files(tuple(signature))
    _recent[key] = (now, digest)
    return digest


@lru_cache(maxsize=64)
def _hash_files(signature: tuple[tuple[str, str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for name, path, _, _ in signature:
        try:
            content = read_regular(path, MAX_TEXT_FILE_BYTES)
        except OSError:
            content = b""
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(content).digest())
    return digest.hexdigest()
