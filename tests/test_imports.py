"""Imports run one way. No module of Tether imports a module that imports it back, directly or
through others, and no package a package that imports it back: imports inside functions
included, each circle reported with its chain. Imports the type checker alone reads (under
`if TYPE_CHECKING:`) are not imports at run time and do not count. Nothing imports the `tether`
command (`tether.cli`) but `python -m tether`, and the command imports none of the edges it
dispatches to by name (they share the frame in `tether.command`); `tether.bot` never names
`tether.mcp` (the bot's MCP server lives in `tether.mcp.bot`)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tether"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2])


@functools.cache
def _modules() -> dict[str, ast.Module]:
    """Every module of the package by its dotted name, parsed."""
    return {
        _module_name(path): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(SRC.rglob("*.py"))
    }


def _runtime_nodes(tree: ast.Module, *, top_level_only: bool) -> list[ast.stmt]:
    """The import statements Python runs: those at module level (also inside `if`/`try` there)
    or, unless `top_level_only`, anywhere; never those under `if TYPE_CHECKING:`."""
    found: list[ast.stmt] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            pending.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        if top_level_only and isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
        ):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _targets(node: ast.stmt, known: set[str]) -> set[str]:
    """The modules of `known` that an import statement loads: `import P.M` loads P.M;
    `from P import N` loads P.N when that is a module, else P."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    assert isinstance(node, ast.ImportFrom)
    assert node.level == 0, f"a relative import ({ast.unparse(node)}): the scan reads absolute ones"
    base = node.module or ""
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names} & known


def module_graph(*, top_level_only: bool = False) -> dict[str, set[str]]:
    """Which modules of the package each module imports, by dotted name."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, tree in modules.items():
        targets: set[str] = set()
        for node in _runtime_nodes(tree, top_level_only=top_level_only):
            targets |= _targets(node, known)
        graph[name] = targets - {name}
    return graph


def _package_graph() -> dict[str, set[str]]:
    """Which packages (and top-level modules) of Tether each one imports."""
    graph: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        package = _package(module)
        graph.setdefault(package, set()).update({_package(t) for t in targets} - {package})
    return graph


def groups(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of two or more nodes of `graph` that all reach each other, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle through each group of `graph` (`groups`), as a path that ends where it starts
    (`[a, b, a]`), in a stable order."""
    return [_circle_in(graph, set(group)) for group in groups(graph)]


def _circle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """The shortest circle from the group's first node back to it, through the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph.get(node, set()) & group):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{sorted(group)} is not a circle")


def _shown(graph: dict[str, set[str]]) -> str:
    """Each circle of `graph` with its chain, and the other modules caught in it."""
    lines = []
    for group in groups(graph):
        chain = _circle_in(graph, set(group))
        others = [m for m in group if m not in chain]
        lines.append(" -> ".join(chain) + (f" (also in it: {', '.join(others)})" if others else ""))
    return "\n".join(lines)


SAMPLE = """
import tether.a
from tether import b, __version__
TYPE_CHECKING = False
if TYPE_CHECKING:
    from tether.c import Name
if typing.TYPE_CHECKING:
    import tether.c
else:
    import tether.e
def f():
    from tether.d import name
"""


def test_the_scan_reads_each_kind_of_import() -> None:
    known = {"tether", "tether.a", "tether.b", "tether.c", "tether.d", "tether.e"}
    tree = ast.parse(SAMPLE)

    def loaded(top_level_only: bool) -> set[str]:
        nodes = _runtime_nodes(tree, top_level_only=top_level_only)
        return set().union(*(_targets(node, known) for node in nodes))

    assert loaded(True) == {"tether", "tether.a", "tether.b", "tether.e"}
    assert loaded(False) == {"tether", "tether.a", "tether.b", "tether.d", "tether.e"}


def test_the_scan_sees_the_modules_and_their_imports() -> None:
    graph = module_graph()
    assert {"tether.mcp.cli", "tether.bot.cli", "tether.verbs", "tether.store"} <= set(graph)
    assert "tether.mcp.server" in graph["tether.mcp.cli"]  # inside a function
    assert "tether.mcp.server" not in module_graph(top_level_only=True)["tether.mcp.cli"]


def test_no_circle_among_modules_function_level_imports_included() -> None:
    graph = module_graph()
    assert groups(graph) == [], f"import circles:\n{_shown(graph)}"


def test_no_circle_among_packages_function_level_imports_included() -> None:
    graph = _package_graph()
    assert groups(graph) == [], f"import circles:\n{_shown(graph)}"


def test_the_bot_package_never_imports_the_mcp_package() -> None:
    assert "tether.mcp" not in _package_graph()["tether.bot"]


def test_no_edge_imports_the_tether_command_and_it_imports_no_edge() -> None:
    """The edges share the command frame (`tether.command`), not the `tether` command; the
    command reaches them by name only, when it runs one."""
    from tether.cli.main import FAMILIES

    graph = _package_graph()
    importers = {package for package, targets in graph.items() if "tether.cli" in targets}
    assert importers == {"tether.__main__"}
    edges = {_package(target.partition(":")[0]) for target, _ in FAMILIES.values()}
    assert {"tether.guard", "tether.mcp", "tether.project"} <= edges - {"tether.cli"}
    assert graph["tether.cli"] & edges == set()


def test_the_circle_finder_finds_each_circle_with_its_chain() -> None:
    graph = {
        "a": {"b"},
        "b": {"c", "x"},
        "c": {"a"},
        "x": {"y"},
        "y": {"x", "z"},
        "z": set(),
        "solo": {"solo"},
    }
    assert circles(graph) == [["a", "b", "c", "a"], ["x", "y", "x"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    # A group wider than its shortest circle names its other members.
    wide = {"a": {"b", "c"}, "b": {"a"}, "c": {"b"}}
    assert _shown(wide) == "a -> b -> a (also in it: c)"
