"""Issue 41, replayed: ``cigeval official-prompts CLONE -o DIR`` with a hostile clone or
folder: nothing is written through a link, a huge or deeply nested source file is one line
(exit 2), never gigabytes of memory or a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from cigeval.cli import main
from cigeval.prompts.official_source import PROMPT_MODULE
from tests.official_stand_in import builtin, write_stand_in


def _one_line(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cigeval official-prompts: error: "), err
    for word in words:
        assert word in lines[0], err


def test_links_planted_in_the_output_folder_are_replaced_never_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone = write_stand_in(tmp_path / "clone")
    out = clone / "official-prompts"  # a clone may ship this folder, full of links
    out.mkdir()
    shell_rc = tmp_path / "bashrc"
    shell_rc.write_text("precious\n")
    for name in ("paper_planner.txt", "prompt-set.json"):
        (out / name).symlink_to(shell_rc)
    assert main(["official-prompts", str(clone), "-o", str(out)]) == 0
    assert shell_rc.read_text() == "precious\n"
    assert not (out / "paper_planner.txt").is_symlink()
    assert (out / "paper_planner.txt").read_text() == builtin("paper_planner")
    assert [p for p in out.iterdir() if p.name.endswith(".tmp")] == []
    capsys.readouterr()
    linked = tmp_path / "linked"
    linked.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    assert main(["official-prompts", str(clone), "-o", str(linked)]) == 2
    _one_line(capsys, "is a symbolic link")
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("# " + "x" * (3 * 1024 * 1024) + "\n", "file too large"),  # 60 MB took 8.9 GB
        # a list of 300,000 names: 1.7 GB to parse under the 2 MiB cap once allowed
        ("x = [" + "a," * 300_000 + "]\n", "file too large (600007 bytes, limit 524288"),
        ("x = " + "-" * 500_000 + "1\n", "MemoryError"),  # nesting the parser cannot take
        ("x = " + "[" * 200_000 + "]" * 200_000 + "\n", "too many nested parentheses"),
    ],
)
def test_a_huge_or_deeply_nested_source_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, said: str
) -> None:
    clone = write_stand_in(tmp_path / "clone")
    (clone / PROMPT_MODULE).write_text(source)
    out = tmp_path / "out"
    assert main(["official-prompts", str(clone), "-o", str(out)]) == 2
    _one_line(capsys, said)
    assert not out.exists()
