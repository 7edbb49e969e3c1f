"""Sub-commands registered by name and built on first use, so the command line starts fast.

A :class:`Command` names a module; the module is imported, and the sub-command's arguments
added, only when that sub-command is parsed or its help is shown. ``cigeval --help`` and
``cigeval tasks`` therefore never import what ``evaluate`` or ``report`` need (numpy,
pandas, the engines, ...). Registering a sub-command is one line in
:data:`cigeval.cli.main.COMMANDS`::

    Command("compare", "compare two results files sample by sample"),

and the module ``cigeval/cli/compare.py`` defines ``configure_compare_parser(parser)``
(adds the arguments, sets the description) and ``run_compare(args) -> int`` (the exit
status). Both names can be overridden, and so can the module.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cigeval.cli._plugins import add_plugin_flag


@dataclass(frozen=True)
class Command:
    """A ``cigeval`` sub-command: its name, its one-line help and where its code lives.

    By default the code is in ``cigeval.cli.<name>`` (hyphens become underscores), which
    defines ``configure_<name>_parser(parser)`` and ``run_<name>(args) -> int``.
    """

    name: str
    help: str
    module: str | None = None
    configure: str | None = None
    run: str | None = None

    @property
    def _stem(self) -> str:
        return self.name.replace("-", "_")

    def _function(self, attribute: str) -> Callable[..., Any]:
        module = importlib.import_module(self.module or f"cigeval.cli.{self._stem}")
        function: Callable[..., Any] = getattr(module, attribute)
        return function

    def configure_parser(self, parser: argparse.ArgumentParser) -> None:
        """Add the sub-command's arguments (and description) to ``parser``."""
        self._function(self.configure or f"configure_{self._stem}_parser")(parser)

    def runner(self) -> Callable[[argparse.Namespace], int]:
        """The function that runs the parsed sub-command and returns its exit status."""
        return self._function(self.run or f"run_{self._stem}")


class LazyParser(argparse.ArgumentParser):
    """A sub-command's parser that adds its arguments the first time it is used (parsing,
    help or usage), so listing the sub-commands imports none of them. Every level takes
    ``--plugin`` (:mod:`cigeval.cli._plugins`) and, as every cigeval parser, no abbreviated
    flag (``--task`` is not read as ``--tasks-file``); the sub-parsers a sub-command adds
    (``meta imagenhub``) are LazyParsers too."""

    def __init__(self, *args: Any, command: Command | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._pending = command
        add_plugin_flag(self)

    def _build(self) -> None:
        command, self._pending = self._pending, None
        if command is not None:
            command.configure_parser(self)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Build the arguments, then parse as usual."""
        self._build()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        """Build the arguments, then the help as usual."""
        self._build()
        return super().format_help()

    def format_usage(self) -> str:
        """Build the arguments, then the usage line as usual."""
        self._build()
        return super().format_usage()


def add_commands(parser: argparse.ArgumentParser, commands: Sequence[Command]) -> None:
    """Register ``commands`` as the sub-commands of ``parser`` (``args.command`` names the
    one given), each built only when it is used."""
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=LazyParser
    )
    for command in commands:
        subparsers.add_parser(command.name, help=command.help, command=command)
