"""Short help for commands with many flags: ``--help`` shows the common ones, ``--help-all``
every flag in its group.

A command lists its common flags by name once (:func:`split_help`); every other flag, also
one added later by a config field or another module, is advanced: hidden from ``--help`` and
shown by ``--help-all`` under the group it was added to. So a new flag needs no change here.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection, Sequence
from typing import Any


class _HelpAll(argparse.Action):
    """``--help-all``: show every flag (the hidden ones back in their groups), then exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        self.hidden: list[tuple[argparse.Action, str | None]] = kwargs.pop("hidden")
        self.short_epilog: str | None = kwargs.pop("short_epilog")
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any, **__: Any) -> None:
        for action, text in self.hidden:
            action.help = text
        parser.epilog = self.short_epilog
        parser.print_help()
        parser.exit()


def split_help(parser: argparse.ArgumentParser, common: Collection[str]) -> None:
    """Hide from ``--help`` every flag of ``parser`` not named in ``common`` and add
    ``--help-all``, which shows them all, grouped. Positional arguments always show. Call it
    after the last flag is added."""
    hidden: list[tuple[argparse.Action, str | None]] = []
    for action in parser._actions:
        shown = not action.option_strings or set(action.option_strings) & set(common)
        if shown or action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        hidden.append((action, action.help))
        action.help = argparse.SUPPRESS
    if not hidden:
        return
    groups = [
        group.title
        for group in parser._action_groups
        if group.title and any(action in group._group_actions for action, _ in hidden)
    ]
    short_epilog = parser.epilog
    more = (
        f"{len(hidden)} more flags ({', '.join(groups)}): cigeval "
        f"{parser.prog.removeprefix('cigeval ')} --help-all"
    )
    parser.epilog = f"{short_epilog}\n\n{more}" if short_epilog else more
    parser.formatter_class = _KeepParagraphs
    parser.add_argument(
        "--help-all",
        action=_HelpAll,
        hidden=hidden,
        short_epilog=short_epilog,
        help="show every flag, grouped, and exit",
    )


class _KeepParagraphs(argparse.HelpFormatter):
    """Wraps each paragraph of a description or epilog on its own (blank lines kept)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            super(_KeepParagraphs, self)._fill_text(part, width, indent)
            for part in text.split("\n\n")
        )
