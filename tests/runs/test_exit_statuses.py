"""Every exit status is documented in one table, linked from the README and the help."""

from __future__ import annotations

import re
from pathlib import Path

import cigeval.runs.status as status
from tests.cli.test_flags import _evaluate_help

ROOT = Path(__file__).resolve().parents[2]


def test_one_table_holds_every_exit_status_and_is_linked() -> None:
    values = sorted({v for k, v in vars(status).items() if k.startswith("EXIT_")})
    assert values == [0, 1, 2, 3, 130, 143]
    table = (ROOT / "docs" / "exit-statuses.md").read_text(encoding="utf-8")
    documented = [int(n) for n in re.findall(r"^\| (\d+) \|", table, flags=re.M)]
    assert documented == values
    assert "docs/exit-statuses.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    help_text = " ".join(_evaluate_help().split())
    assert "docs/exit-statuses.md" in help_text
    for value in values:
        assert re.search(rf"\b{value}\b", help_text.split("exit status:")[1]), value
