"""Which prompts produced a number: the prompt set of a run, and the check of ``--prompt-dir``.

Every record names its prompt set (``provenance.prompt_set``, one string):

- ``official:<hash>``: the official CIGEval prompts, from a folder ``cigeval official-prompts``
  wrote and nobody changed since (its manifest, :data:`.official_source.MANIFEST`, lists each
  template's sha256); ``<hash>`` is the folder's (:func:`folder_sha256`);
- ``paraphrase``: cigeval's built-in paper-layout templates, its own wording of the official
  prompts (the default run);
- ``cigeval``: cigeval's own prompts of its layout (``--request-layout cigeval``, the
  ``extended`` method) or of another rubric;
- ``custom:<hash>``: any other ``--prompt-dir`` (an official folder that was edited included).

A ``--prompt-dir`` used with the paper layout must hold every paper template the run may
render (:func:`missing_templates`): an incomplete folder would mix its wording with cigeval's
paraphrases while the records named the folder.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from cigeval._digest import file_sha256
from cigeval.prompts.exact import EXACT_SUFFIX
from cigeval.prompts.official_source import MANIFEST
from cigeval.prompts.paper_templates import paper_templates

if TYPE_CHECKING:
    from cigeval.config import EvalConfig

#: The prompt sets a record may name (the part before ``:``).
PROMPT_SETS = ("official", "paraphrase", "cigeval", "custom")
#: Hex digits of a folder's sha256 kept in the prompt set's name.
HASH_DIGITS = 16
_TEMPLATE_SUFFIXES = (EXACT_SUFFIX, ".j2")


def uses_paper_templates(config: EvalConfig) -> bool:
    """Whether ``config`` renders the paper layout's templates (the cigeval rubric under
    ``request_layout="official"``)."""
    return config.rubric == "cigeval" and config.request_layout == "official"


def required_templates(config: EvalConfig) -> list[str]:
    """The paper templates a run under ``config`` may render (none outside the paper layout)."""
    return paper_templates() if uses_paper_templates(config) else []


def missing_templates(config: EvalConfig, prompt_dir: str | None) -> list[str]:
    """The file names of the templates the run needs that ``prompt_dir`` lacks (none without
    a folder: the built-in set is complete)."""
    if prompt_dir is None:
        return []
    folder = Path(prompt_dir).expanduser()
    names = [f"{name}{EXACT_SUFFIX}" for name in required_templates(config)]
    return [name for name in names if not (folder / name).is_file()]


def _template_files(folder: Path) -> dict[str, Path]:
    try:
        entries = list(folder.iterdir())
    except OSError:
        return {}
    return {p.name: p for p in entries if p.suffix in _TEMPLATE_SUFFIXES and p.is_file()}


def _file_sha256(path: Path) -> str | None:
    try:
        return file_sha256(path)
    except OSError:
        return None


def folder_sha256(prompt_dir: str | Path) -> str:
    """The sha256 (hex) of a prompt folder's templates: each file's name and content, in name
    order (other files, the manifest included, do not count)."""
    digest = hashlib.sha256()
    for name, path in sorted(_template_files(Path(prompt_dir).expanduser()).items()):
        digest.update(name.encode("utf-8") + b"\0")
        digest.update((_file_sha256(path) or "").encode("ascii"))
    return digest.hexdigest()


def is_official_folder(prompt_dir: str | Path) -> bool:
    """Whether ``prompt_dir`` holds the templates ``cigeval official-prompts`` wrote there,
    unchanged, and no other template."""
    folder = Path(prompt_dir).expanduser()
    try:
        manifest = json.loads((folder / MANIFEST).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("prompt_set") != "official":
        return False
    listed = manifest.get("templates")
    if not isinstance(listed, dict):
        return False
    files = _template_files(folder)
    if set(files) != set(listed):
        return False
    return all(_file_sha256(files[name]) == sha for name, sha in listed.items())


def prompt_set_of(config: EvalConfig, prompt_dir: str | None = None) -> str:
    """The prompt set a judge with ``config`` and ``prompt_dir`` (by default the config's)
    uses, as records name it (see the module docstring)."""
    folder = prompt_dir if prompt_dir is not None else config.prompt_dir
    paper = uses_paper_templates(config)
    if folder is None:
        return "paraphrase" if paper else "cigeval"
    digest = folder_sha256(folder)[:HASH_DIGITS]
    if paper and is_official_folder(folder):
        return f"official:{digest}"
    return f"custom:{digest}"
