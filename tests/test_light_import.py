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
    "inspect_ai",
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


def test_the_integrations_import_their_framework_only_when_used() -> None:
    assert _loaded_after("import cigeval.integrations.inspect_ai") == []


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
    assert 25 <= len(names) <= 41  # 41: cigeval.calibrate (issue 39)
    assert {"evaluate", "Evaluator", "define_rubric", "rule_judge", "ScriptedBackend"} <= set(names)
    for name in names:
        assert getattr(cigeval, name).__doc__, f"{name} has no docstring"
    assert sorted(dir(cigeval)) == sorted(cigeval.__all__)


#: What building the argument tree must not import: the sub-commands' implementations and
#: the libraries they need (they load when their command runs).
SUB_COMMAND_CODE = (
    "numpy",
    "PIL",
    "pandas",
    "scipy",
    "langgraph",
    "pydantic",
    "cigeval.probes",
    "cigeval.engines",
    "cigeval.report",
    "cigeval.evaluation",
    "cigeval.cli.evaluate",
    "cigeval.cli.meta",
    "cigeval.cli.probe",
    "cigeval.cli.report",
    "cigeval.cli.finetune",
)


def _loaded_by_command(argv: list[str]) -> list[str]:
    """Which of SUB_COMMAND_CODE ``cigeval ARGV`` has imported when it returns."""
    program = (
        "import contextlib, io, sys\nfrom cigeval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass\n"
        f"print(','.join(m for m in {SUB_COMMAND_CODE!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    return [m for m in done.stdout.strip().split(",") if m]


def test_the_help_and_the_tasks_command_import_no_sub_command() -> None:
    assert _loaded_by_command(["--help"]) == []
    assert _loaded_by_command(["--version"]) == []
    assert _loaded_by_command(["tasks"]) == []


def test_a_sub_commands_help_imports_only_that_sub_command() -> None:
    loaded = _loaded_by_command(["report", "--help"])
    assert "cigeval.cli.report" in loaded
    assert not {"cigeval.cli.evaluate", "cigeval.cli.probe", "cigeval.report", "scipy"} & set(
        loaded
    )
    loaded = _loaded_by_command(["evaluate", "--help"])
    assert "cigeval.cli.evaluate" in loaded
    assert not {"pandas", "scipy", "langgraph", "cigeval.probes", "cigeval.report"} & set(loaded)


def test_the_evaluate_flags_load_no_numpy_pil_tool_or_engine_code() -> None:
    # Its flags come from the config models, whose modules keep images, tools and the Ray
    # engine out of the way until a run needs them.
    code = (
        "import contextlib, io, sys\nfrom cigeval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['evaluate', '--help'])\n    except SystemExit:\n        pass\n"
        "heavy = ('numpy', 'PIL', 'cigeval.images', 'cigeval.sample', 'cigeval.engines.ray_engine',"
        " 'cigeval.tools.difference', 'cigeval.tools.grounding')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == ""


LAZY_PACKAGES = (
    "cigeval",
    "cigeval.backends",
    "cigeval.engines",
    "cigeval.meta",
    "cigeval.runs",
    "cigeval.tasks",
    "cigeval.tools",
)


def test_every_lazy_package_lists_and_refuses_names_the_same_way() -> None:
    import importlib

    import pytest

    for package in LAZY_PACKAGES:
        module = importlib.import_module(package)
        assert dir(module) == sorted(module.__all__), package
        with pytest.raises(AttributeError) as refused:
            module.no_such_name  # noqa: B018
        assert str(refused.value) == f"module {package!r} has no attribute 'no_such_name'"
        for name in module.__all__:
            assert getattr(module, name) is getattr(module, name), f"{package}.{name}"


def test_an_openai_judge_loads_its_sdk_only_when_it_calls() -> None:
    """A run whose every answer is cached never calls the backend, so never needs the SDK."""
    code = (
        "from cigeval.backends import resolve_backend\n"
        "backend = resolve_backend('openai:judge@http://127.0.0.1:9/v1')\n"
        "backend.payload  # the backend is built and usable without a call"
    )
    assert "openai" not in _loaded_after(code)
    code += "\nbackend._new_client(backend.urls[0])"
    assert "openai" in _loaded_after(code)
