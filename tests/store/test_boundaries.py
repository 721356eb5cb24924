"""Imports run one way: nothing outside `tether.store` reads a store's files or reaches into a
store's private parts. The package's sources are scanned (their syntax trees, so comments and
docstrings do not count): outside `tether/store/`, no module imports a store backend
(`tether.store.file`, `.memory`, `.postgres`) or a private name of `tether.store`, and none
spells the name of an execution's tree, trace or lock file. They go through `tether.store`
(`store_for`, `path_of`, `scheme_of`) and the contract in `tether.store.base` (`list`,
`revision`, `load`...)."""

from __future__ import annotations

import ast
from pathlib import Path

import tether

PACKAGE = Path(tether.__file__).resolve().parent
BACKENDS = ("tether.store.file", "tether.store.memory", "tether.store.postgres")
# How the file store names the files beside a state file.
SIDECARS = (".tree.json", ".trace.jsonl", ".json.lock", ".json.trace", ".refused.jsonl")


def _outside_the_stores() -> dict[str, str]:
    sources = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] != "store":
            sources[str(rel)] = path.read_text()
    return sources


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def violations(source: str) -> list[str]:
    """What `source` does that only a store may do."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.startswith(BACKENDS)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(BACKENDS):
                found.append(f"from {node.module} import ...")
            elif node.module in ("tether.store", "tether.store.base"):
                found += [
                    f"from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") or f"{node.module}.{a.name}" in BACKENDS
                ]
        elif (text := _forbidden_text(node)) is not None and id(node) not in docstrings:
            found.append(f"the string {text!r}")
    return found


def _forbidden_text(node: ast.AST) -> str | None:
    """The string `node` is, if it names a store backend or an execution's file."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    text = node.value
    return text if text.startswith(BACKENDS) or any(s in text for s in SIDECARS) else None


def test_the_scan_sees_what_it_forbids() -> None:
    planted = (
        "from tether.store.file import path_of\n"
        "import tether.store.postgres\n"
        "from tether.store import _stores, file\n"
        "import importlib\n"
        "importlib.import_module('tether.store.memory')\n"
        "def f(p):\n"
        "    '''Reads p + '.tree.json' (a docstring may say so).'''\n"
        "    return open(p + '.tree.json')\n"
    )
    assert violations(planted) == [
        "from tether.store.file import ...",
        "import tether.store.postgres",
        "from tether.store import _stores",
        "from tether.store import file",
        "the string 'tether.store.memory'",
        "the string '.tree.json'",
    ]
    assert violations("from tether.store import store_for, path_of\n") == []


def test_no_module_outside_the_stores_reads_their_files_or_private_parts() -> None:
    sources = _outside_the_stores()
    assert "verbs.py" in sources and "viewer/server.py" in sources
    found = {rel: v for rel, source in sources.items() if (v := violations(source))}
    assert found == {}
