"""`import cigeval` and its public names load no heavy library; the CLI starts light."""

from __future__ import annotations

import subprocess
import sys

import cigeval

HEAVY = (
    "langgraph",
    "langchain_core",
    "pandas",
    "scipy",
    "cv2",
    "torch",
    "transformers",
    "matplotlib",
    "openai",
    "trl",
    "peft",
    "datasets",
    "ray",
    "pyarrow",
)


def _loaded_after(code: str) -> list[str]:
    program = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    return [m for m in done.stdout.strip().split(",") if m]


def test_every_public_name_resolves_without_a_heavy_import() -> None:
    code = "import cigeval\nfor name in cigeval.__all__: getattr(cigeval, name)"
    assert _loaded_after(code) == []


def test_the_tasks_and_rubrics_commands_load_no_heavy_library() -> None:
    code = (
        "import contextlib, io\nfrom cigeval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['tasks']) == 0 and main(['rubrics']) == 0"
    )
    assert _loaded_after(code) == []


def test_the_training_package_and_the_finetune_help_load_no_heavy_library() -> None:
    code = (
        "import contextlib, io\nimport cigeval.training\nfrom cigeval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['finetune', '--help'])\n    except SystemExit:\n        pass"
    )
    assert _loaded_after(code) == []


def test_the_public_api_is_curated_and_documented() -> None:
    names = [n for n in cigeval.__all__ if n != "__version__"]
    assert 25 <= len(names) <= 40
    assert {"evaluate", "Evaluator", "define_rubric", "rule_judge", "ScriptedBackend"} <= set(names)
    for name in names:
        assert getattr(cigeval, name).__doc__, f"{name} has no docstring"
    assert sorted(dir(cigeval)) == sorted(cigeval.__all__)
