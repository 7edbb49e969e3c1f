"""The layers of cigeval (docs/architecture.md), read from the source: no import circle
anywhere, and the judge, the run and the report each import only what lies below them.

Every import of a cigeval module counts: at the top of a file, deferred into a function,
under ``TYPE_CHECKING``, and a module a package names for a lazy export.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cigeval"
#: The packages whose modules may not form an import circle among themselves.
RUN_LAYERS = ("cigeval.evaluation", "cigeval.runs", "cigeval.engines", "cigeval.tracking")
#: What the judge (samples in, Scores out) must not know of.
ABOVE_THE_JUDGE = ("cigeval.runs", "cigeval.engines", "cigeval.tracking")


def module_files() -> dict[str, Path]:
    """Every module of cigeval by dotted name (a package by its own name)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` is, or the nearest package holding it (``pkg.attr`` -> ``pkg``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The cigeval modules ``module`` imports, in any form."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod
            named.extend(
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named.extend(_lazy_target(node.value, package, path))
    found = {_owner(name, modules) for name in named if name.startswith("cigeval")}
    return {name for name in found if name is not None and name != module}


def _lazy_target(text: str, package: str, path: Path) -> list[str]:
    """The module a package's lazy export names (``"cigeval.stats"``, ``".average"``); other
    strings (a logger's or an entry-point group's name) import nothing. A registry's
    ``"module:attribute"`` entries are its plugins, looked up by name, not imports: a
    built-in tool or backend imports the registry it is listed in, as a plugin would."""
    if path.name != "__init__.py":
        return []
    return [package + text if text.startswith(".") else text]


def import_graph() -> dict[str, set[str]]:
    """Each cigeval module -> the cigeval modules it imports."""
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_every_form_of_import() -> None:
    graph = import_graph()
    assert "cigeval.evaluation.evaluator" in graph["cigeval.evaluation"]  # top level
    assert "cigeval.backends.batch" in graph["cigeval.evaluation.evaluator"]  # deferred
    assert "cigeval.runs.result" in graph["cigeval.tracking.base"]  # TYPE_CHECKING
    assert "cigeval.runs.evaluator" in graph["cigeval.runs"]  # a lazy name, by string
    assert "cigeval.runs.breaker" in graph["cigeval.runs.recorder"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_judge_imports_nothing_from_the_run_the_engines_or_the_trackers() -> None:
    graph = import_graph()
    judge = [m for m in graph if _within(m, ("cigeval.evaluation",))]
    assert len(judge) >= 5
    wrong = {m: sorted(t for t in graph[m] if _within(t, ABOVE_THE_JUDGE)) for m in judge}
    assert {m: t for m, t in wrong.items() if t} == {}


def test_no_import_circle_among_the_judge_run_engines_and_trackers() -> None:
    graph = import_graph()
    kept = {m: {t for t in ts if _within(t, RUN_LAYERS)} for m, ts in graph.items()}
    kept = {m: ts for m, ts in kept.items() if _within(m, RUN_LAYERS)}
    assert len(kept) >= 25
    assert circles(kept) == []


def test_the_run_reaches_the_engines_through_their_protocol_only() -> None:
    graph = import_graph()
    run = [m for m in graph if _within(m, ("cigeval.runs",))]
    reached = {t for m in run for t in graph[m] if _within(t, ("cigeval.engines",))}
    assert "cigeval.engines.base" in reached
    # the protocol and the engine settings; never an engine's own module
    allowed = {"cigeval.engines.base", "cigeval.engines.settings"}
    assert reached <= allowed


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_no_import_circle_anywhere_in_cigeval() -> None:
    graph = import_graph()
    assert len(graph) >= 200
    assert circles(graph) == []


def test_the_card_renderer_knows_records_not_scores() -> None:
    # the Jupyter card renders a record: nothing it reaches imports Score
    assert "cigeval.score" not in _reachable(import_graph(), "cigeval.results.html")
