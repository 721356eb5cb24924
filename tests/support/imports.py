"""Reading imports from the source, for the structural tests (`tests/test_imports.py`, the whole
package; `tests/guard/test_layers.py`, the guard's layers): every module under a folder by its
dotted name, the modules each one imports, the graph among them, and its circles (Tarjan's
strongly connected components) with a chain through each. What counts as an import is the
caller's to say: those under `if TYPE_CHECKING:` or not, those inside functions and classes or
module level only, relative ones resolved or refused."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module under `root`, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, read once a session."""
    return ast.parse(path.read_text(encoding="utf-8"))


def statements(
    tree: ast.Module, *, type_checking: bool = True, top_level_only: bool = False
) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of `tree`: anywhere, or at module level only (also inside `if`/`try`
    there) when `top_level_only`; those under `if TYPE_CHECKING:` only when `type_checking`."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if (
            not type_checking
            and isinstance(node, ast.If)
            and ast.unparse(node.test).endswith("TYPE_CHECKING")
        ):
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


def loaded(
    node: ast.Import | ast.ImportFrom,
    known: set[str],
    *,
    module: str = "",
    is_package: bool = False,
    relative: bool = True,
) -> set[str]:
    """The modules an import statement of `module` loads: `import P.M` loads P.M; `from P import
    N` loads P.N when `known` has it, else P. A relative import is resolved against `module` (a
    package's `__init__` when `is_package`), or refused unless `relative`."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        assert relative, f"a relative import ({ast.unparse(node)}): the scan reads absolute ones"
        anchor = module.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, *([base] if base else [])])
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}


def imported(
    module: str,
    path: Path,
    known: set[str],
    *,
    type_checking: bool = True,
    top_level_only: bool = False,
    relative: bool = True,
) -> set[str]:
    """The modules that `module` (its source at `path`) imports, in `known` or not."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in statements(
        parsed(path), type_checking=type_checking, top_level_only=top_level_only
    ):
        found |= loaded(node, known, module=module, is_package=is_package, relative=relative)
    return found - {module}


def graph(root: Path, package: str, **reading: bool) -> dict[str, set[str]]:
    """Who imports whom among the modules under `root` (`package`), each read as `imported` reads
    it with `reading` (`type_checking`, `top_level_only`, `relative`)."""
    modules = module_names(root, package)
    known = set(modules)
    return {name: imported(name, path, known, **reading) & known for name, path in modules.items()}


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
    return [circle_in(graph, set(group)) for group in groups(graph)]


def circle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
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


def shown(graph: dict[str, set[str]]) -> str:
    """Each circle of `graph` with its chain, and the other modules caught in it."""
    lines = []
    for group in groups(graph):
        chain = circle_in(graph, set(group))
        others = [m for m in group if m not in chain]
        lines.append(" -> ".join(chain) + (f" (also in it: {', '.join(others)})" if others else ""))
    return "\n".join(lines)
