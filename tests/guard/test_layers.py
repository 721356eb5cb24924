"""The guard's layers hold: the rule engine (`rules/`) below the workflow binding (`binding/`)
below the harness edge (`harness/`) below the guard's command line (`cli.py`); no module imports
a higher layer, and no import circle runs inside the guard. Every import is read from the
source (`tests/support/imports.py`), those inside functions and under `TYPE_CHECKING` included,
so a deferred import cannot hide an upward one."""

from __future__ import annotations

from pathlib import Path

import tether.guard
from support.imports import graph, groups, imported, module_names

ROOT = Path(tether.guard.__file__).resolve().parent
PACKAGE = "tether.guard"
# Lowest first. The package's own `__init__` (it re-exports the engine lazily) sits on top.
LAYERS = ("rules", "binding", "harness", "cli")


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
    assert groups(graph(ROOT, PACKAGE)) == []


def test_the_guard_reaches_the_runtime_only_through_the_verbs() -> None:
    """The engine and the stores are the runtime's insides: the guard calls `tether.verbs`. The
    engine's names (`tether.engine.names`: the statuses and kinds the verbs answer with) are not
    insides: the guard compares with them."""
    modules = module_names(ROOT, PACKAGE)
    inside = sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        for target in imported(name, path, set(modules))
        if target.split(".")[:2] in (["tether", "engine"], ["tether", "store"])
        and target != "tether.engine.names"
    )
    assert inside == []


def test_the_reading_sees_deferred_relative_and_submodule_imports(tmp_path: Path) -> None:
    """The checks above would pass on a reading that misses imports: here each kind of import
    makes an upward edge or a circle, and each is found."""
    for folder in ("rules", "binding", "harness"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text('"""A layer."""\n')
    (tmp_path / "__init__.py").write_text("from p.rules import ruleset\n")
    (tmp_path / "binding" / "__init__.py").write_text("from ..harness import hooks\n")
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
        "p.binding imports p.harness.hooks",
        "p.binding.binder imports p.harness.hooks",
        "p.rules.engine imports p.binding.binder",
    ]
    assert groups(edges) == [
        ["p.binding.binder", "p.harness.hooks", "p.rules.config", "p.rules.engine"]
    ]
