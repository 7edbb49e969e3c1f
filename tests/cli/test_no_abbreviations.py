"""No flag of any cigeval command can be abbreviated: a prefix is an unknown argument, never
silently another flag (``cigeval tasks --task X`` once read X as --tasks-file)."""

from __future__ import annotations

import argparse

import pytest

from cigeval.cli import build_parser, main


def _every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    """The top parser and every sub-command's, at every level, with their arguments built."""
    found: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        parser.format_usage()  # a lazy sub-command adds its arguments on first use
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")

    walk(build_parser(), "cigeval")
    return found


def test_every_parser_and_sub_parser_refuses_abbreviations() -> None:
    parsers = _every_parser()
    paths = {path for path, _ in parsers}
    assert {"cigeval", "cigeval evaluate", "cigeval tasks", "cigeval meta imagenhub"} <= paths
    assert [path for path, parser in parsers if parser.allow_abbrev] == []


def test_tasks_with_a_prefix_of_tasks_file_is_an_unrecognized_argument(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["tasks", "--task", "X"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --task X" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["evaluate", "s.jsonl", "--mod", "openai:x", "--out", "r.jsonl"], "--mod"),
        (["meta", "imagenhub", "--hum"], "--hum"),
    ],
)
def test_a_prefix_of_a_sub_command_flag_is_not_taken_for_it(
    argv: list[str], prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert prefix in err and ("unrecognized arguments" in err or "required" in err)
