"""The trace is read in one place, by its names: no module of the package compares an entry's
kind, an execution's status or a reply's status with a string literal. The engine names those
values once (`tether.engine.names`) and reads a trace back once (`tether.engine.trace`: which
entries move an execution, how an entry ends an action's attempt, the step token and the node
key); every other reader (stats, spans, the binding, the inbox, the viewer) compares with the
names. The sources are scanned (their syntax trees): a literal of one of those values in a
comparison (`==`, `!=` on either side; the tuple, list or set an `in` looks in) fails, naming the
file and line."""

from __future__ import annotations

import ast
from pathlib import Path

import tether
from tether.engine.names import Kind, Reply, RequestType, Status

PACKAGE = Path(tether.__file__).resolve().parent
VALUES = {member.value for names in (Kind, Status, Reply, RequestType) for member in names}
# The engine names the values; the tree format's step keys (`instruct`, `check`, `human`) and the
# guard's rules and harness adapters (a harness event's own names) are other vocabularies.
OWNERS = {"engine", "tree", "guard/rules", "guard/harness"}


def _literals(node: ast.AST) -> list[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for e in node.elts for c in _literals(e)]
    return []


def _compared(tree: ast.AST) -> list[ast.Constant]:
    """The literals of those values compared (`'check' in step`, a key looked up in a mapping,
    is not a comparison of a value and does not count)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            membership = all(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            sides = node.comparators if membership else [node.left, *node.comparators]
            for side in sides:
                found += _literals(side)
    return [c for c in found if c.value in VALUES]


def test_no_module_compares_a_trace_value_with_a_literal() -> None:
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if any(relative.as_posix().startswith(owner + "/") for owner in OWNERS):
            continue
        for constant in _compared(ast.parse(path.read_text(encoding="utf-8"))):
            strays.append(f"{relative}:{constant.lineno}: {constant.value!r}")
    assert strays == [], "compare with tether.engine.names instead:\n" + "\n".join(strays)


def test_the_scan_sees_each_kind_of_comparison() -> None:
    sample = ast.parse(
        "a == 'tool'\n'running' != b\nc in ('stop', x)\nd not in {'human'}\ne == 'other'\n"
        "'check' in step\n"
    )
    assert [c.value for c in _compared(sample)] == ["tool", "running", "stop", "human"]
