"""Each mechanism has one home in the package. The sources are scanned (their syntax trees, so
comments and docstrings do not count) for the calls only that home may make: replacing a file by
rename (`tether.files.write_atomic`), cutting a file back (`tether.appendlog`'s torn tail, the
file store's committed length), writing a file in place, printing a JSON error document on
stderr (`tether.command.output`), reading YAML (`tether.tree.locations`, with positions) and parsing
a command line with argparse (`tether.command.args` is the CLI's parser)."""

from __future__ import annotations

import ast
from pathlib import Path

import tether

PACKAGE = Path(tether.__file__).resolve().parent

# A call, by its dotted name, and the modules that may make it.
HOMES: dict[str, set[str]] = {
    "os.replace": {
        "files.py",
        "guardlog.py",  # rotates the whole error log aside; no file is written here
    },
    "os.rename": set(),
    "tempfile.mkstemp": set(),
    "tempfile.NamedTemporaryFile": set(),
    "os.ftruncate": {
        "appendlog.py",
        "store/file.py",  # a commit cuts the trace to the committed length; the lock's mark
    },
    "argparse.ArgumentParser": set(),
}
# Writing a whole file in place, which `write_atomic` does instead.
WRITE_HOMES = {
    "treetest/run.py",  # stages a case's files in a folder of its own, made for the run
}
YAML_HOMES = {
    "tree/locations.py",  # reads every YAML document, with positions
    "bot/folder.py",  # writes a tree file; reads no YAML
}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _writes_in_place(call: ast.Call) -> bool:
    """`path.write_text(...)`, `path.write_bytes(...)` or `open(path, "w...")`."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("write_text", "write_bytes"):
        return True
    if _dotted(call.func) != "open":
        return False
    modes = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
    return any(isinstance(m, ast.Constant) and "w" in str(m.value) for m in modes)


def _yaml_importers() -> set[str]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name == "yaml" or name.startswith("yaml.") for name in names):
                found.add(str(path.relative_to(PACKAGE)))
    return found


def _calls() -> dict[str, set[str]]:
    """Every module's calls that one of the homes owns: call name -> modules."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = _dotted(node.func)
            if name in HOMES:
                found.setdefault(name, set()).add(rel)
            elif _writes_in_place(node):
                found.setdefault("write in place", set()).add(rel)
            elif name == "sys.stderr.write" and any(
                _dotted(inner.func) == "json.dumps"
                for inner in ast.walk(node)
                if isinstance(inner, ast.Call)
            ):
                found.setdefault("sys.stderr.write(json.dumps(...))", set()).add(rel)
    return found


def test_each_mechanism_is_called_only_from_its_home() -> None:
    found = _calls()
    assert "files.py" in found["os.replace"]  # the scan sees the home itself
    strays = {
        name: modules - HOMES.get(name, set())
        for name, modules in found.items()
        if name in HOMES and modules - HOMES[name]
    }
    assert strays == {}
    assert found.get("write in place", set()) <= WRITE_HOMES
    assert _yaml_importers() == YAML_HOMES
    # Errors reach stderr through tether.command.output's emit, which prints every JSON document.
    assert "sys.stderr.write(json.dumps(...))" not in found


def test_every_family_reports_errors_through_the_command_frame() -> None:
    """The modules behind `tether X` import the shared frame, none its own argparse."""
    from tether.cli.main import FAMILIES

    for target, _ in FAMILIES.values():
        module = target.partition(":")[0]
        source = (PACKAGE.parent / (module.replace(".", "/") + ".py")).read_text()
        assert "from tether.command.output import" in source, module
        assert "import argparse" not in source, module


# Path confinement: whether a resolved path lies inside a root. `tether.files.is_inside` is the
# rule; these are the other spellings of it, found by shape: `os.path.commonpath(...)`,
# `Path.is_relative_to(...)` and `x.startswith(y + os.sep)`.
CONFINEMENT_HOMES = {
    "files.py",  # is_inside itself; linked_folder tells a path outside by its leading `..`
    "mcp/install.py",  # writes `--root` relative when it lies under the project, as spelled
    "guard/harness/session_store.py",  # drops its own cache's entries under a folder, as keyed
}


def _confines(call: ast.Call) -> bool:
    name = _dotted(call.func)
    if name in ("os.path.commonpath", "commonpath") or (
        isinstance(call.func, ast.Attribute) and call.func.attr == "is_relative_to"
    ):
        return True
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "startswith"):
        return False
    return any(
        isinstance(arg, ast.BinOp) and _dotted(arg.right) in ("os.sep", "sep") for arg in call.args
    )


def test_path_confinement_has_one_home() -> None:
    """Every check that a path stays inside a root (`--root`, the served folder, a `$ref` base,
    a project) calls `tether.files.is_inside`; none compares paths itself."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]
        if any(_confines(call) for call in calls):
            found.add(str(path.relative_to(PACKAGE)))
    assert "files.py" in found  # the scan sees the home itself
    assert found <= CONFINEMENT_HOMES
    users = {
        "admission.py",
        "viewer/place.py",
        "tree/load.py",
        "treetest/run.py",
        "guard/binding/recorded.py",
    }
    for rel in users:
        assert "is_inside(" in (PACKAGE / rel).read_text(), rel
