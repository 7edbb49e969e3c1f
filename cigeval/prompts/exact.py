"""Exact-text templates: the prompts of the paper's request layout (``request_layout=official``).

The official CIGEval code builds its prompts from Python strings with ``str.replace`` of
``{name}`` placeholders, and sends them as they are (no stripping). These templates work the
same way, so a prompt dir written by ``cigeval official-prompts`` from the user's copy of that
code makes cigeval's requests byte-identical to the official client's. The built-in ones
(``paper_*.txt`` in this folder) are cigeval's own wording with the same structure.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from cigeval._regular_file import MAX_TEXT_FILE_BYTES, read_regular
from cigeval.errors import ConfigError
from cigeval.prompts import BUILTIN_FOLDER, SIGNATURE_TTL_S

#: The suffix of exact-text template files.
EXACT_SUFFIX = ".txt"


def exact_path(name: str, prompt_dir: str | None = None) -> Path | None:
    """The file holding template ``name`` (``prompt_dir`` first), or None when there is none."""
    for folder in ([Path(prompt_dir).expanduser()] if prompt_dir else []) + [BUILTIN_FOLDER]:
        path = folder / f"{name}{EXACT_SUFFIX}"
        if path.is_file():
            return path
    return None


#: Each template's text, read at most once every SIGNATURE_TTL_S seconds (as the templates'
#: hash is made, :func:`cigeval.prompts.templates_sha256`): every planner and judge request
#: of the paper layout reads several, and looking each file up and reading it per request
#: took 7% of a served sample's CPU.
_texts: dict[tuple[str, str | None], tuple[float, str]] = {}


def read_exact(name: str, prompt_dir: str | None = None) -> str:
    """The text of template ``name``, byte for byte (ConfigError when it cannot be read); an
    edited file counts within :data:`~cigeval.prompts.SIGNATURE_TTL_S` seconds."""
    key = (name, prompt_dir)
    now = time.monotonic()
    kept = _texts.get(key)
    if kept is not None and now - kept[0] < SIGNATURE_TTL_S:
        return kept[1]
    text = _read_exact(name, prompt_dir)
    _texts[key] = (now, text)
    return text


def _read_exact(name: str, prompt_dir: str | None) -> str:
    path = exact_path(name, prompt_dir)
    if path is None:
        raise ConfigError(f"no prompt template {name}{EXACT_SUFFIX} (built in or in {prompt_dir})")
    try:
        return read_regular(path, MAX_TEXT_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the prompt template {path}: {exc}") from None


def fill(name: str, values: Sequence[tuple[str, str]], prompt_dir: str | None = None) -> str:
    """Template ``name`` with each ``{placeholder}`` replaced by its value, in the order given
    (as the official code does it: a value holding a later placeholder is replaced too)."""
    text = read_exact(name, prompt_dir)
    for placeholder, value in values:
        text = text.replace("{" + placeholder + "}", value)
    return text
