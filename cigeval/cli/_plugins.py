"""``--plugin MODULE``: import a module of your own before a command runs.

A plugin is any Python module that registers tasks, tools, rubrics or backends when it is
imported (``cigeval.register_tool(MyTool())``, ...), so what it defines can be named on the
command line without packaging it with an entry point. ``MODULE`` is a dotted module name
(found on ``sys.path`` or in the current folder) or the path of a ``.py`` file.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType

from cigeval.cli._common import UsageError

#: The help of ``--plugin`` on every command.
PLUGIN_HELP = (
    "import MODULE first (a dotted name or a .py file) so the tasks, tools, rubrics or "
    "backends it registers can be named (repeatable; docs/cli.md)"
)
#: ``--plugin`` values are stored under this prefix plus the parser's name, one attribute per
#: parser level, so ``cigeval --plugin a evaluate --plugin b`` keeps both.
_DEST_PREFIX = "plugin:"


def add_plugin_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--plugin MODULE`` (repeatable) to ``parser``."""
    parser.add_argument(
        "--plugin",
        action="append",
        dest=_DEST_PREFIX + parser.prog,
        default=argparse.SUPPRESS,
        metavar="MODULE",
        help=PLUGIN_HELP,
    )


def plugins_given(args: argparse.Namespace) -> list[str]:
    """Every ``--plugin`` value of the parsed command line, in the order of the levels."""
    return [
        name
        for dest, names in vars(args).items()
        if dest.startswith(_DEST_PREFIX)
        for name in names
    ]


def load_plugins(names: list[str]) -> list[ModuleType]:
    """Import each plugin once, in order; a plugin that cannot be imported is a UsageError
    naming it and why (the line of the plugin that failed, when the failure is inside it)."""
    return [load_plugin(name) for name in dict.fromkeys(names)]


def load_plugin(name: str) -> ModuleType:
    """Import one plugin: a ``.py`` file path or a dotted module name."""
    if name.endswith(".py") or os.sep in name or "/" in name:
        return _load_file(Path(name))
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # like ``python -m``: modules of the current folder
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise UsageError(
                f"--plugin {name}: no module named {exc.name!r} (give a module importable "
                "from here, or the path of a .py file)"
            ) from None
        raise UsageError(_failure(name, exc)) from None
    except Exception as exc:
        raise UsageError(_failure(name, exc)) from None


def _load_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise UsageError(f"--plugin {path}: no such file")
    module_name = "cigeval_plugin_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"--plugin {path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up there
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)  # so the plugin can import the modules beside it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise UsageError(_failure(str(path), exc)) from None
    return module


def _failure(name: str, exc: BaseException) -> str:
    """``--plugin NAME failed: <error> (at FILE, line N)``: where inside the plugin it broke."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {last.filename}, line {last.lineno})"
    return f"--plugin {name} failed while importing: {type(exc).__name__}: {exc}{where}"
