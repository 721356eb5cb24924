"""The guard's layers hold: the rule engine (`rules/`) below the workflow binding (`binding/`)
below the harness edge (`harness/`) below the guard's command line (`cli.py`); no module imports
a higher layer, and no import circle runs inside the guard. Every import is read from the
source, those inside functions and under `TYPE_CHECKING` included, so a deferred import cannot
hide an upward one."""

from __future__ import annotations

import ast
from pathlib import Path

import tether.guard

ROOT = Path(tether.guard.__file__).resolve().parent
PACKAGE = "tether.guard"
# Lowest first. The package's own `__init__` (it re-exports the engine lazily) sits on top.
LAYERS = ("rules", "binding", "harness", "cli")


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module under `root`, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules that module `name` imports anywhere in its source (a name imported from a
    package is the submodule when `known` has it)."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    return targets - {name}


def graph(root: Path, package: str) -> dict[str, set[str]]:
    """Who imports whom among the modules under `root`."""
    modules = module_names(root, package)
    known = set(modules)
    return {name: imported(name, path, known) & known for name, path in modules.items()}


def layer(name: str, package: str) -> int:
    """The rank of a module's layer; the package itself ranks above every layer."""
    rest = name[len(package) + 1 :].split(".")[0] if name != package else ""
    return LAYERS.index(rest) if rest in LAYERS else len(LAYERS)


def upward(edges: dict[str, set[str]], package: str) -> list[str]:
    return sorted(
        f"{source} imports {target}"
        for source, targets in edges.items()
        for target in targets
        if layer(target, package) > layer(source, package)
    )


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
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

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def test_every_module_lives_in_a_layer() -> None:
    strays = [
        name
        for name in module_names(ROOT, PACKAGE)
        if name != PACKAGE and layer(name, PACKAGE) == len(LAYERS)
    ]
    assert strays == []


def test_no_module_imports_a_higher_layer() -> None:
    assert upward(graph(ROOT, PACKAGE), PACKAGE) == []


def test_no_import_circle_inside_the_guard() -> None:
    assert circles(graph(ROOT, PACKAGE)) == []


def test_the_guard_reaches_the_runtime_only_through_the_verbs() -> None:
    """The engine and the stores are the runtime's insides: the guard calls `tether.verbs`."""
    modules = module_names(ROOT, PACKAGE)
    inside = sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        for target in imported(name, path, set(modules))
        if target.split(".")[:2] in (["tether", "engine"], ["tether", "store"])
    )
    assert inside == []


def test_the_reading_sees_deferred_relative_and_submodule_imports(tmp_path: Path) -> None:
    """The checks above would pass on a reading that misses imports: here each kind of import
    makes an upward edge or a circle, and each is found."""
    for folder in ("rules", "binding", "harness"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text('"""A layer."""\n')
    (tmp_path / "__init__.py").write_text("from p.rules import engine\n")
    (tmp_path / "cli.py").write_text("from p.harness import hooks\n")
    (tmp_path / "rules" / "engine.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..binding.binder import Binder\n"
        "def later():\n    from . import config\n"
    )
    (tmp_path / "rules" / "config.py").write_text("import p.rules.engine\n")
    (tmp_path / "binding" / "binder.py").write_text(
        "def late():\n    from p.harness import hooks\n"
    )
    (tmp_path / "harness" / "hooks.py").write_text("from p.rules.engine import Guard\n")
    edges = graph(tmp_path, "p")
    assert upward(edges, "p") == [
        "p.binding.binder imports p.harness.hooks",
        "p.rules.engine imports p.binding.binder",
    ]
    assert circles(edges) == [
        ["p.binding.binder", "p.harness.hooks", "p.rules.config", "p.rules.engine"]
    ]
