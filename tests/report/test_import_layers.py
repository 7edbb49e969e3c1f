"""Records, runs, statistics, rubric ranges and the report form no import circle: counting
every import (deferred into functions and under TYPE_CHECKING too), nothing that ``Score``
reaches imports ``Score`` back, and the card renderer reads records, not Scores."""

from __future__ import annotations

import ast
from pathlib import Path

import cigeval

ROOT = Path(cigeval.__file__).resolve().parent
#: The modules whose imports this test holds to no circle.
OWNED = ("cigeval.score", "cigeval.stats", "cigeval.results", "cigeval.report",
         "cigeval.rubrics.base", "cigeval.rubrics.registry")  # fmt: skip


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ["cigeval", *path.relative_to(ROOT).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _deepest(name: str, known: dict[str, Path]) -> str:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The cigeval modules ``name`` imports anywhere: a submodule when an import names one,
    else the deepest package named."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(_deepest(alias.name, known) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in known else _deepest(base, known))
    return targets - {"", name}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_no_import_circle_through_records_runs_stats_rubric_ranges_or_the_report() -> None:
    known = _modules()
    graph = {name: _imports(name, path, known) for name, path in known.items()}
    owned = [m for m in graph if m.startswith(OWNED)]
    assert "cigeval.results.run" in owned and "cigeval.report.cards" in owned
    circles = sorted(m for m in owned if m in _reachable(graph, m))
    assert circles == [], f"these modules import themselves back: {circles}"
    # the Jupyter card renders a record: nothing it reaches knows Score
    assert "cigeval.score" not in _reachable(graph, "cigeval.results.html")
