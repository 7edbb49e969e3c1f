"""Execute the notebooks in notebooks/ and save their outputs, so they read without running.

    python scripts/run_notebooks.py                    # every notebooks/*.ipynb, saved in place
    python scripts/run_notebooks.py notebooks/case_studies.ipynb
    python scripts/run_notebooks.py --check            # execute in memory, write nothing

Each notebook runs in a fresh kernel with notebooks/ as its working directory and
HF_HUB_OFFLINE=1 (nothing is downloaded), each cell under a time limit. A cell that fails
stops that notebook: the command names the notebook and the cell, leaves the file as it was,
and exits with status 1 once every notebook has been tried. Volatile metadata (execution
timestamps, the Python patch version) is not written, so regenerating a notebook whose
outputs did not change leaves its file unchanged. The saved metadata records a hash of the
code cells (``cigeval.sources_sha256``), so tests/test_notebooks.py can tell when a cell was
edited after its outputs were saved.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: Seconds one cell may run before the notebook counts as broken.
CELL_TIMEOUT_S = 300
#: Set in the kernel's environment: no model or data download, stable output order.
KERNEL_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0"}


@dataclass
class NotebookRun:
    """How one notebook's execution went: ``failure`` is None when every cell ran."""

    path: Path
    seconds: float
    notebook: nbformat.NotebookNode
    failure: str | None = None


def notebook_paths(names: list[str] | None = None) -> list[Path]:
    """The notebooks named (paths, or file names in notebooks/), else every one there."""
    if not names:
        return sorted(NOTEBOOKS.glob("*.ipynb"))
    paths = []
    for name in names:
        path = Path(name)
        if not path.exists() and (NOTEBOOKS / name).exists():
            path = NOTEBOOKS / name
        if not path.is_file():
            raise SystemExit(f"no notebook {name!r} (looked in {NOTEBOOKS})")
        paths.append(path.resolve())
    return paths


def _describe_cell(notebook: nbformat.NotebookNode, index: int) -> str:
    cell = notebook.cells[index]
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    return f"cell {index + 1} of {len(notebook.cells)} ({first.strip()[:60]!r})"


def _error_text(exc: Exception) -> str:
    if isinstance(exc, CellExecutionError):
        return f"{exc.ename}: {exc.evalue}"
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def execute(path: Path, cell_timeout: int = CELL_TIMEOUT_S) -> NotebookRun:
    """Execute ``path`` in a fresh kernel (cwd: its folder) and return the executed copy."""
    notebook = nbformat.read(path, as_version=4)
    started: list[int] = []
    client = NotebookClient(
        notebook,
        timeout=cell_timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
        on_cell_start=lambda cell, cell_index: started.append(cell_index),
    )
    saved_env = {key: os.environ.get(key) for key in KERNEL_ENV}
    os.environ.update(KERNEL_ENV)  # the kernel inherits this process's environment
    clock = time.perf_counter()
    failure = None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        where = _describe_cell(notebook, started[-1]) if started else "before the first cell"
        failure = f"{path.name}: {where} failed: {_error_text(exc)}"
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return NotebookRun(path, time.perf_counter() - clock, notebook, failure)


def sources_sha256(notebook: nbformat.NotebookNode) -> str:
    """A hash of the code cells' sources: what the saved outputs were produced from."""
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return hashlib.sha256("\x1f".join(code).encode("utf-8")).hexdigest()


def strip_volatile(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop metadata that changes on every run or machine (timestamps, Python patch level)."""
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
    info = notebook.metadata.get("language_info")
    if info is not None:
        info.pop("version", None)
    return notebook


def save(run: NotebookRun) -> bool:
    """Write the executed notebook over its file; True when the file changed.

    The notebook's metadata records the hash of the code it ran (``cigeval.sources_sha256``),
    so a test can tell when a cell was edited after its outputs were saved.
    """
    notebook = strip_volatile(run.notebook)
    notebook.metadata["cigeval"] = {"sources_sha256": sources_sha256(notebook)}
    text = nbformat.writes(notebook)
    text += "" if text.endswith("\n") else "\n"
    if run.path.read_text(encoding="utf-8") == text:
        return False
    run.path.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the notebooks; 0 when all ran, 1 when one failed (each failure is printed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: all)")
    parser.add_argument(
        "--check", action="store_true", help="execute in memory only; write no file"
    )
    parser.add_argument(
        "--timeout", type=int, default=CELL_TIMEOUT_S, help="seconds per cell (default %(default)s)"
    )
    args = parser.parse_args(argv)
    failures = []
    for path in notebook_paths(args.notebooks):
        run = execute(path, args.timeout)
        if run.failure:
            failures.append(run.failure)
            print(f"FAILED {run.failure}", file=sys.stderr)
            continue
        note = "checked" if args.check else ("saved" if save(run) else "unchanged")
        print(f"{path.name}: ran in {run.seconds:.1f} s, {note}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
