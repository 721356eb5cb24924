"""Imports run one way: no package of Tether imports, at module level, a package that imports it
back, and `tether.bot` never names `tether.mcp`, even inside a function (the bot's MCP server
lives in `tether.mcp.bot`)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tether"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2])


def _imports(tree: ast.Module, *, top_level_only: bool) -> set[str]:
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n.startswith("tether.")}


def _graph(*, top_level_only: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        source = ast.parse(path.read_text(encoding="utf-8"))
        package = _package(_module_name(path))
        targets = {_package(n) for n in _imports(source, top_level_only=top_level_only)}
        graph.setdefault(package, set()).update(targets - {package})
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle among the packages of `graph`, as a path, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_scan_sees_the_packages_and_their_imports() -> None:
    graph = _graph(top_level_only=False)
    assert {"tether.mcp", "tether.bot", "tether.verbs", "tether.store"} <= set(graph)
    assert "tether.bot" in graph["tether.mcp"]


def test_no_cycle_at_module_level_among_packages() -> None:
    assert _cycle(_graph(top_level_only=True)) is None


def test_the_bot_package_never_imports_the_mcp_package() -> None:
    assert "tether.mcp" not in _graph(top_level_only=False)["tether.bot"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
