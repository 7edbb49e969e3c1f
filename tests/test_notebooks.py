"""The notebooks in notebooks/ run, and their saved outputs can be read without running them.

Every ``notebooks/*.ipynb`` is executed the way ``python scripts/run_notebooks.py --check``
executes it (the same function: a fresh kernel, notebooks/ as working directory, offline), and
its saved copy must hold the outputs of its current code: every code cell run in order, no
error, the code unchanged since (a hash the script records), images where the notebook's
point is what it shows, and a size a code host displays.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Notebooks whose point is what they show: their saved outputs must include an image.
SHOWS_IMAGES = {"case_studies.ipynb", "custom_tool_ocr.ipynb", "report_small_run.ipynb"}
#: Above this a code host may refuse to render a notebook (and a diff becomes unreadable).
MAX_BYTES = 2 * 1024 * 1024
#: What a temporary path looks like on Linux, macOS and Windows, and on this machine.
TEMP_PATH = re.compile(
    "|".join(
        [
            r"/tmp/",
            r"/var/folders/",
            r"\\AppData\\Local\\Temp",
            re.escape(str(Path(tempfile.gettempdir()).resolve())),
        ]
    )
)
#: Inline images (base64 may spell anything, "/tmp/" included).
DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")


@functools.cache
def _runner() -> ModuleType:
    """scripts/run_notebooks.py, imported (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location(
        "run_notebooks", ROOT / "scripts" / "run_notebooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _ids(path: Path) -> str:
    return path.name


def _has_image(output: dict) -> bool:
    data = output.get("data", {})
    html = data.get("text/html", "")
    html = "".join(html) if isinstance(html, list) else html
    return "image/png" in data or "image/jpeg" in data or bool(re.search(r"<img\s", html))


def _output_text(output: dict) -> str:
    """The text of one saved output (streams, text and HTML; images left out)."""
    parts = [output.get("text", ""), output.get("evalue", "")]
    for mime, value in output.get("data", {}).items():
        if not mime.startswith("image/"):
            parts.append("".join(value) if isinstance(value, list) else str(value))
    text = "".join("".join(p) if isinstance(p, list) else str(p) for p in parts)
    return DATA_URI.sub("data:...", text)


def temporary_paths(notebook: nbformat.NotebookNode) -> list[str]:
    """Every saved output that shows a temporary path (it changes on every run)."""
    found = []
    for index, cell in enumerate(notebook.cells):
        outputs = cell.outputs if cell.cell_type == "code" else []
        for text in map(_output_text, outputs):
            match = TEMP_PATH.search(text)
            if match:
                around = text[max(0, match.start() - 40) : match.end() + 40]
                found.append(f"cell {index + 1}: {match.group(0)!r} in {around!r}")
    return found


def test_the_case_study_notebooks_are_there() -> None:
    names = {path.name for path in NOTEBOOKS}
    assert {"case_studies.ipynb", "custom_tool_ocr.ipynb", "finetune_loop.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_saved_notebook_holds_the_outputs_of_its_code(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    regenerate = f"run: python scripts/run_notebooks.py {path.name}"
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), regenerate
    recorded = notebook.metadata.get("cigeval", {}).get("sources_sha256")
    assert recorded == _runner().sources_sha256(notebook), f"code changed since saved; {regenerate}"
    outputs = [output for cell in code for output in cell.outputs]
    assert outputs, regenerate
    errors = [f"{o.ename}: {o.evalue}" for o in outputs if o.output_type == "error"]
    assert not errors, errors
    assert not any("execution" in cell.metadata for cell in code)  # no timestamps
    assert temporary_paths(notebook) == []  # nor paths that change on every run
    if path.name in SHOWS_IMAGES:
        assert any(_has_image(output) for output in outputs), f"{path.name} shows no image"
    assert path.stat().st_size < MAX_BYTES


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_runs(path: Path) -> None:
    run = _runner().execute(path)
    assert run.failure is None, run.failure
    assert any(cell.get("outputs") for cell in run.notebook.cells if cell.cell_type == "code")


def _write(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"
    nbformat.write(notebook, path)
    return path


def test_check_names_the_broken_cell_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "broken.ipynb", "x = 1", "print(x)", "x / 0")
    before = path.read_bytes()
    assert _runner().main(["--check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "broken.ipynb: cell 3 of 3 ('x / 0') failed: ZeroDivisionError" in err
    assert path.read_bytes() == before


def test_a_cell_over_its_time_limit_fails_the_notebook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "slow.ipynb", "import time", "time.sleep(30)")
    assert _runner().main(["--check", "--timeout", "1", str(path)]) == 1
    assert "slow.ipynb: cell 2 of 2 ('time.sleep(30)') failed: CellTimeoutError" in (
        capsys.readouterr().err
    )


def test_saving_runs_offline_in_the_notebook_folder_and_is_stable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path / "ok.ipynb",
        "import os",
        "print(os.getcwd())\nprint(os.environ['HF_HUB_OFFLINE'])",
    )
    runner = _runner()
    assert runner.main([str(path)]) == 0
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[1].outputs[0].text.splitlines() == [str(tmp_path.resolve()), "1"]
    assert "execution" not in saved.cells[1].metadata
    assert "version" not in saved.metadata.get("language_info", {})
    assert saved.metadata["cigeval"]["sources_sha256"] == runner.sources_sha256(saved)
    text = path.read_text()
    assert runner.main([str(path)]) == 0
    assert "ok.ipynb: ran in" in capsys.readouterr().out
    assert path.read_text() == text  # a second run changes nothing


def test_a_temporary_path_in_an_output_is_found(tmp_path: Path) -> None:
    path = _write(tmp_path / "paths.ipynb", "print('x')", "1")
    notebook = nbformat.read(path, as_version=4)
    image = "data:image/png;base64,AAAA/tmp/BBBB"  # base64 that happens to spell it
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", text=f"{tmp_path}/a.png\n")]
    notebook.cells[1].outputs = [
        nbformat.v4.new_output(
            "execute_result", data={"text/html": f"<img src='{image}'>", "text/plain": "1"}
        )
    ]
    found = temporary_paths(notebook)
    assert len(found) == 1 and found[0].startswith("cell 1: ")
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", text="report.html 12 kB\n")]
    assert temporary_paths(notebook) == []
