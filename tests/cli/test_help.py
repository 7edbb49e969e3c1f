"""The help pages: short by default, complete with --help-all, every sub-command reachable."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from cigeval._version import __version__
from cigeval.cli import main
from cigeval.cli.evaluate import COMMON_FLAGS
from cigeval.cli.main import COMMANDS


def _printed(argv: list[str]) -> str:
    """What ``cigeval ARGV`` prints on stdout before it exits (help and version pages)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    return out.getvalue()


def _flags(text: str) -> set[str]:
    """The flags a help page describes (each at the start of its option line)."""
    return set(re.findall(r"^ {2}(?:-\w, )?(--[a-z][a-z0-9-]*)", text, flags=re.M))


def _sections(text: str) -> dict[str, str]:
    """The help page's sections by title (``judging:`` -> its lines)."""
    sections: dict[str, str] = {}
    title = ""
    for line in text.splitlines():
        if re.match(r"^[a-z][\w ()./]*:$", line):
            title = line[:-1]
        sections[title] = sections.get(title, "") + line + "\n"
    return sections


def test_version() -> None:
    assert _printed(["--version"]) == f"cigeval {__version__}\n"


def test_evaluate_help_is_short_and_shows_the_common_flags() -> None:
    text = _printed(["evaluate", "--help"])
    assert len(text.splitlines()) <= 60
    shown = _flags(text)
    assert set(COMMON_FLAGS) <= shown
    assert "--help-all" in shown
    assert shown - {"--help", "--help-all"} <= set(COMMON_FLAGS)
    assert re.search(r"\d+ more flags \(.+\): cigeval evaluate --help-all", " ".join(text.split()))


def test_help_all_shows_every_flag_in_its_group() -> None:
    short = _printed(["evaluate", "--help"])
    full = _printed(["evaluate", "--help-all"])
    hidden = _flags(full) - _flags(short)
    assert {"--temperature", "--combine", "--engine", "--batch", "--rpm"} <= hidden
    sections = _sections(full)
    assert "--temperature" in sections["judging"] and "--aggregate" in sections["judging"]
    assert "--combine" in sections["ensembles"]
    assert "--engine" in sections["engine (docs/ray.md)"]
    assert "--batch" in sections["running"] and "--rpm" in sections["running"]
    count = re.search(r"(\d+) more flags", " ".join(short.split()))
    assert count is not None and int(count.group(1)) == len(hidden)
    assert "more flags" not in full


def test_every_sub_command_builds_and_has_a_runner() -> None:
    listed = _printed(["--help"])
    for command in COMMANDS:
        assert command.name in listed
        text = _printed([command.name, "--help"])
        assert text.startswith(f"usage: cigeval {command.name}")
        assert "--plugin MODULE" in text
        assert callable(command.runner())
