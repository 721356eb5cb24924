"""No function in `src/tether` has a cyclomatic complexity over `LIMIT` unless its docstring says
why, in a paragraph that begins `Complexity:`. A function that branches that much is read
branch by branch; the reader deserves to know why it was not split.

The measure is McCabe's, counted as radon counts it (ruff's C901 does not count boolean
operators, so it finds a quarter of these): one, plus one for each `if`, `elif`, conditional
expression, loop (and its `else`), `except` (and a `try`'s `else`), `case`, comprehension
`for` and its `if`s, and each operand of `and`/`or` after the first. Nested functions and
classes are measured on their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tether"
LIMIT = 20
MARK = "Complexity:"

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The cyclomatic complexity of `function`'s own body, as the module docstring counts it."""
    count, todo = 1, list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If | ast.IfExp | ast.match_case):
            count += 1
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While):
            count += 1 + bool(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            count += len(node.handlers) + bool(node.orelse)
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        todo.extend(ast.iter_child_nodes(node))
    return count


def functions(
    tree: ast.AST, prefix: str = ""
) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under `tree`, named `Class.method` (nested ones `outer.inner`)."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            name = prefix + node.name
            if isinstance(node, _FUNCTIONS):
                found.append((name, node))
            found += functions(node, name + ".")
        else:
            found += functions(node, prefix)
    return found


def offenders() -> dict[str, int]:
    """`file:function` → complexity, for each function over `LIMIT` whose docstring does not
    say why."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, function in functions(tree):
            measured = complexity(function)
            why = ast.get_docstring(function) or ""
            if measured > LIMIT and not any(line.startswith(MARK) for line in why.splitlines()):
                found[f"{path.relative_to(SRC).as_posix()}:{name}"] = measured
    return found


def test_no_function_is_over_the_limit_without_saying_why() -> None:
    assert offenders() == {}


def test_the_measure_counts_branches_and_boolean_operators() -> None:
    source = """
def f(x, items):
    if x and x > 1 or x < -1:
        return [i for i in items if i if i > 0]
    elif x:
        try:
            pass
        except ValueError:
            pass
        else:
            pass
    for i in items:
        while i:
            i -= 1
    else:
        pass
    match x:
        case 1:
            return 1 if x else 2
        case _:
            pass
    def inner(y):
        if y:
            pass
"""
    (name, function), (inner_name, inner) = functions(ast.parse(source))
    # 1 + if, 2 boolean operands, comprehension for and 2 ifs, elif, except, try-else,
    # for and its else, while, 2 cases, conditional expression
    assert (name, complexity(function)) == ("f", 1 + 1 + 2 + 3 + 1 + 2 + 2 + 1 + 2 + 1)
    assert (inner_name, complexity(inner)) == ("f.inner", 2)
