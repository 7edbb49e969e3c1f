"""What a run refuses before it opens anything: a results path that is one of its inputs.

A run writes the results file and files next to it (the lock, the rejected lines, the
rewrite's temporary file, the old results moved aside by ``--overwrite``, the images shown to
the judge, the batch state, the Ray log). A typo such as ``--out samples.jsonl`` must never
make any of them an input of the run (the samples file, a tasks file, a plugin): that input
would be truncated or taken for results. Paths are compared by the file they reach (symlinks
resolved, hard links by inode), so another name of the same file is caught too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from cigeval._caller import in_callers_words
from cigeval._regular_file import open_regular
from cigeval.errors import InputError
from cigeval.results.jsonl import overwritten_path, rejected_path, rewrite_path
from cigeval.results.lock import lock_path
from cigeval.terminal import safe_text


class NoSamples(InputError):
    """The samples file holds no sample (it is empty, or blank lines only)."""


def samples_file_problem(path: Path) -> str | None:
    """What stops ``path`` being read as a samples file (missing, a directory, not a
    regular file), or None."""
    if path.is_dir():
        return f"{safe_text(path)} is a directory, not a samples file (give a JSONL file)"
    if not path.exists():
        return f"samples file not found: {safe_text(path)}"
    if not path.is_file():
        return f"{safe_text(path)} is not a regular file (give a samples JSONL file)"
    return None


def check_samples_file(path: Path) -> None:
    """InputError when ``path`` cannot be a samples file; :class:`NoSamples` when it holds
    no sample."""
    problem = samples_file_problem(path)
    if problem is not None:
        raise InputError(problem)
    with open_regular(path) as handle:
        if not any(line.strip() for line in handle):
            raise NoSamples(
                f"the samples file {safe_text(path)} holds no samples (it is empty); "
                "nothing was judged"
            )


#: How many lines of an existing file ``--overwrite`` reads to decide it holds results.
_LINES_CHECKED = 20


def results_paths(
    out: Path, image_dir: Path | None = None, others: Mapping[str, Path | None] | None = None
) -> dict[str, Path]:
    """Every file a run on ``out`` writes, by what it is (``image_dir`` is a folder)."""
    paths = {
        "the results file": out,
        "its lock": lock_path(out),
        "its rejected lines": rejected_path(out),
        "its rewrite's temporary file": rewrite_path(out),
        f"the old results {in_callers_words('--overwrite', 'overwrite=True')} moves aside": (
            overwritten_path(out)
        ),
    }
    if image_dir is not None:
        paths["the folder of images shown to the judge"] = image_dir
    for name, path in (others or {}).items():
        if path is not None:
            paths[name] = path
    return paths


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` reach the same file (symlinks resolved, hard links by inode;
    by their resolved paths where either cannot be looked at)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def refuse_results_over_inputs(
    written: Mapping[str, Path], inputs: Iterable[tuple[str, Path]]
) -> None:
    """InputError when a file the run writes (``written``, :func:`results_paths`) is one of
    ``inputs`` (what it is, path), or a folder it writes holds one; nothing is opened."""
    for kind, source in inputs:
        for name, path in written.items():
            folder = name.startswith("the folder")
            if same_file(path, source) or (folder and _inside(source, path)):
                raise InputError(
                    f"{_out()} {safe_text(written['the results file'])}: {name} "
                    f"({safe_text(path)}) would be the {kind} {safe_text(source)}, which the "
                    f"run reads; choose another {_out()} (nothing was written)"
                )


def plugin_files(names: Iterable[str]) -> list[Path]:
    """The files of the loaded plugins named on the command line (a path or a module)."""
    import sys

    files = []
    for name in names:
        if name.endswith(".py") or os.sep in name or "/" in name:
            files.append(Path(name))
            continue
        module_file = getattr(sys.modules.get(name), "__file__", None)
        if module_file:
            files.append(Path(module_file))
    return files


def refuse_overwriting_non_results(out: Path) -> None:
    """InputError when ``--overwrite`` would replace a file that does not hold results
    records (JSON objects with an ``id`` and a ``status``): a mistyped ``--out`` naming
    something else is refused rather than replaced. An empty file, or one whose last line
    a killed run left torn, still counts as results."""
    try:
        with out.open("rb") as handle:
            lines = [line for line in (handle.readline() for _ in range(_LINES_CHECKED)) if line]
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"{_overwrite()}: cannot read {safe_text(out)}: {exc.strerror}") from None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if not raw.endswith(b"\n") and number == len(lines):
            continue  # the torn last line of a killed run
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            record = None
        if not isinstance(record, dict) or "id" not in record or "status" not in record:
            raise InputError(
                f"{_overwrite()} refuses to replace {safe_text(out)}: line {number} is not a "
                "results record (a JSON object with an id and a status), so the file does "
                f"not look like results; check {_out()}, or move the file away yourself"
            )


def refuse_planted_links(written: Mapping[str, Path]) -> None:
    """InputError when a file or folder the run writes next to its results (``written``,
    :func:`results_paths`, the results file itself aside) is a symbolic link: a link planted
    at ``RESULTS.images`` or ``RESULTS.lock`` would make the run write wherever it points."""
    from cigeval.image_store import refused_link

    for name, path in written.items():
        if name != "the results file" and os.path.islink(path):
            raise InputError(
                f"{_out()} {safe_text(written['the results file'])}: " + refused_link(path, name)
            )


def _out() -> str:
    """The results file's option, in the caller's words."""
    return in_callers_words("--out", "out path")


def _overwrite() -> str:
    """The option that replaces a results file, in the caller's words."""
    return in_callers_words("--overwrite", "overwrite=True")
