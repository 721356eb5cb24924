"""Imports run one way. No module of Tether imports a module that imports it back, directly or
through others, and no package a package that imports it back: imports inside functions
included, each circle reported with its chain. Imports the type checker alone reads (under
`if TYPE_CHECKING:`) are not imports at run time and do not count. Nothing imports the `tether`
command (`tether.cli`) but `python -m tether`, and the command imports none of the edges it
dispatches to by name (they share the frame in `tether.command`); `tether.bot` never names
`tether.mcp` (the bot's MCP server lives in `tether.mcp.bot`). The scan is
`tests/support/imports.py`'s."""

from __future__ import annotations

import ast
from pathlib import Path

from support import imports

SRC = Path(__file__).resolve().parents[1] / "src" / "tether"


def _package(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2])


def module_graph(*, top_level_only: bool = False) -> dict[str, set[str]]:
    """Which modules of the package each module imports at run time (not those under
    `if TYPE_CHECKING:`), by dotted name; a relative import fails the scan."""
    return imports.graph(
        SRC, "tether", type_checking=False, top_level_only=top_level_only, relative=False
    )


def _package_graph() -> dict[str, set[str]]:
    """Which packages (and top-level modules) of Tether each one imports."""
    graph: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        package = _package(module)
        graph.setdefault(package, set()).update({_package(t) for t in targets} - {package})
    return graph


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

    def read(top_level_only: bool) -> set[str]:
        nodes = imports.statements(tree, type_checking=False, top_level_only=top_level_only)
        return known & set().union(*(imports.loaded(node, known, relative=False) for node in nodes))

    assert read(True) == {"tether", "tether.a", "tether.b", "tether.e"}
    assert read(False) == {"tether", "tether.a", "tether.b", "tether.d", "tether.e"}


def test_the_scan_sees_the_modules_and_their_imports() -> None:
    graph = module_graph()
    assert {"tether.mcp.cli", "tether.bot.cli", "tether.verbs", "tether.store"} <= set(graph)
    assert "tether.mcp.server" in graph["tether.mcp.cli"]  # inside a function
    assert "tether.mcp.server" not in module_graph(top_level_only=True)["tether.mcp.cli"]


def test_no_circle_among_modules_function_level_imports_included() -> None:
    graph = module_graph()
    assert imports.groups(graph) == [], f"import circles:\n{imports.shown(graph)}"


def test_no_circle_among_packages_function_level_imports_included() -> None:
    graph = _package_graph()
    assert imports.groups(graph) == [], f"import circles:\n{imports.shown(graph)}"


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
    assert imports.circles(graph) == [["a", "b", "c", "a"], ["x", "y", "x"]]
    assert imports.circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    # A group wider than its shortest circle names its other members.
    wide = {"a": {"b", "c"}, "b": {"a"}, "c": {"b"}}
    assert imports.shown(wide) == "a -> b -> a (also in it: c)"
