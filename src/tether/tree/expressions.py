"""CEL expressions in trees: `check` steps and the `when`, `for_each` and `repeat` modifiers.

Owns: compiling (with a cache keyed by source), static checking with the position of a problem,
and evaluating an expression against the `var` and `const` scopes and the loop items around it.

Scopes. CEL reserves the words `var` and `const`, so an expression sees the scopes as `VAR` and
`CONST`, with the abtree aliases `LOCAL` (= VAR) and `GLOBAL` (= CONST). A `check` also sees
`TOOLS`, the tool calls recorded during its action's attempt (a list of `{tool, input, ok, seq}`;
empty elsewhere and when none were recorded). Inside a `for_each` an expression also sees `ITEM`
(the innermost loop's item), `ITEM_INDEX` (its index, from 0) and `ITEMS` (every enclosing loop's
item by its `as` name); outside one, those names are undefined. Authors may also write the
step-text spelling `$VAR.x`, `$LOCAL.x`, `$CONST.x`, `$GLOBAL.x` or `$ITEM`: before compiling,
the `$` of those prefixes (outside string literals) becomes a space, so every column the library
reports still points at the author's text.

Bounded work. The library has no cost limit and holds the interpreter lock while it evaluates
(one `map` three deep over 200 items ran for minutes and froze a server), so an expression's
work is bounded from its text and its inputs before it runs. Comprehensions (`all`, `exists`,
`exists_one`, `map`, `filter`) nest at most `MAX_NESTING` deep: deeper is `invalid_tree` when
the tree loads. An expression whose work grows faster than its inputs (comprehensions nested,
`map`/`filter`, which copy their list once per item, `in` inside a comprehension) is refused
with an `ExpressionError` when the longest list or map it could iterate, to the power of those
levels, exceeds `MAX_WORK`, or when what its operations may copy or scan (strings included,
see `_bound_work`) exceeds `MAX_COST`; that is decided by counting, never by a clock, so replay
decides alike. Only the names an expression reads are converted into the library's values.

Loading the library. `import cel` costs about 200 ms, because the package's `__init__` also
imports its interactive command line (prompt_toolkit and friends), and the CLI's step path has to
stay fast. So the compiled extension module `cel/cel.*.so` (or `.pyd`) is loaded on its own, by
file, through `importlib.machinery.ExtensionFileLoader` (about 10 ms), and registered as
`cel.cel` in `sys.modules`, so that a later `import cel` elsewhere reuses it rather than
initialising the extension twice. If the file cannot be found, it falls back to `import cel`.
The library is loaded on first use only, under a lock (two threads initialising the extension at
once make it panic): importing this module costs nothing, and it never imports YAML or pydantic.

Does not own: where in a tree file an expression sits (`load.py` adds the file location), or
what a false condition means at run time (the engine).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from tether.errors import TetherError

_PREFIX = re.compile(r"\$(VAR|LOCAL|CONST|GLOBAL|ITEM|ITEM_INDEX|ITEMS)\b")
_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")
_QUOTES = "\"'"
_SHOWN_CHARS = 120  # how much of a wrong result a reason quotes

# Bounded work (see the module's docstring and `_Shape.levels`).
MAX_NESTING = 2
MAX_WORK = 100_000
MAX_COST = 50_000_000  # characters and items an evaluation may copy or scan (`_bound_work`)
_ITERATES = frozenset({"all", "exists", "exists_one", "map", "filter"})
_BUILDS = frozenset({"map", "filter"})  # they build a list, one copy per item: n**2 each
_TOKEN = re.compile(
    r"(?P<skip>//[^\n]*|\s+)|(?P<quote>[rRbB]{0,2}[\"'])"
    r"|\.\s*(?P<call>[A-Za-z_]\w*)\s*\(|(?P<word>[A-Za-z_]\w*)|(?P<open>[(\[{])|(?P<close>[)\]}])"
    r"|."
)

_cel: ModuleType | None = None
_loading = threading.Lock()  # servers compile on worker threads; the extension loads once
_programs: dict[str, tuple[Any, _Shape]] = {}


class ExpressionError(Exception):
    """An expression could not be evaluated, or a condition did not produce a bool."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _library() -> ModuleType:
    global _cel
    if _cel is None:
        with _loading:
            if _cel is None:
                _cel = sys.modules.get("cel.cel") or _load_extension()
    return _cel


def _load_extension() -> ModuleType:
    spec = importlib.util.find_spec("cel")
    folders = list(spec.submodule_search_locations or []) if spec else []
    paths = [p for d in folders for glob in ("cel.*.so", "cel*.pyd") for p in Path(d).glob(glob)]
    ext_spec = (
        importlib.util.spec_from_file_location(
            "cel.cel",
            paths[0],
            loader=importlib.machinery.ExtensionFileLoader("cel.cel", str(paths[0])),
        )
        if paths
        else None
    )
    if ext_spec is None or ext_spec.loader is None:
        import cel

        return cel
    module = importlib.util.module_from_spec(ext_spec)
    ext_spec.loader.exec_module(module)
    sys.modules["cel.cel"] = module
    return module


def prepare(src: str) -> str:
    """`src` with the `$` of `$VAR`, `$LOCAL`, `$CONST`, `$GLOBAL` and the item names replaced
    by a space, outside string literals (so columns are unchanged)."""
    if "$" not in src:
        return src
    out: list[str] = []
    i = 0
    while i < len(src):
        char = src[i]
        if char in _QUOTES:
            end = _string_end(src, i)
            out.append(src[i:end])
            i = end
            continue
        match = _PREFIX.match(src, i) if char == "$" else None
        if match:
            out.append(" " + match.group(1))
            i = match.end()
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _string_end(src: str, start: int) -> int:
    """The index just after the string literal opening at `start` (or the end of `src`)."""
    quote = src[start] * 3 if src.startswith(src[start] * 3, start) else src[start]
    raw = start > 0 and src[start - 1] in "rR"
    i = start + len(quote)
    while i < len(src):
        if src[i] == "\\" and not raw:
            i += 2
            continue
        if src.startswith(quote, i):
            return i + len(quote)
        i += 1
    return len(src)


class _Shape:
    """What an expression's text says about its work. `nesting`: how deep its comprehensions
    nest (with the line, column and macro of the deepest); `levels`: the power of `n` its work
    grows by, where a comprehension at depth k counts k (k + 1 for `map` and `filter`, which
    copy their list once per item) and `in` inside k comprehensions counts k + 1 (it searches
    a list); `ops` and `ops_inside`: the operations outside and inside a comprehension that may
    copy or scan a whole string or list (`+`, `*`, `in`, every function or method call but the
    comprehensions); `listed`: a bound on the length of a list written in the text (its commas + 1);
    `reads`: the names it reads (only those are converted into the library's values, which
    costs time in proportion to their size)."""

    __slots__ = (
        "column",
        "levels",
        "line",
        "listed",
        "macro",
        "nesting",
        "ops",
        "ops_inside",
        "reads",
    )

    def __init__(self, src: str, reads: list[str]) -> None:
        self.reads = frozenset(reads)
        self.nesting = self.levels = self.ops = self.ops_inside = 0
        self.line = self.column = 1
        self.macro = ""
        self.listed = src.count(",") + 1
        stack: list[bool] = []  # open brackets, True for a comprehension's
        i = 0
        while i < len(src):
            token = _TOKEN.match(src, i)
            assert token is not None  # the last alternative matches any character
            i = token.end()
            if token["quote"]:
                i = _string_end(src, i - 1)
            elif token["call"]:
                iterates = token["call"] in _ITERATES
                if iterates:
                    self._site(src, token.start("call"), token["call"], sum(stack) + 1)
                self._op(stack, not iterates)
                stack.append(iterates)
            elif token["word"] == "in":
                self.levels = max(self.levels, sum(stack) + 1)
                self._op(stack)
            elif token["open"]:
                self._op(stack, token["open"] == "(" and src[:i].rstrip("( ")[-1:].isalnum())
                stack.append(False)
            elif token.group() in "+*":
                self._op(stack)
            elif token["close"] and stack:
                stack.pop()

    def _op(self, stack: list[bool], counts: bool = True) -> None:
        if counts and any(stack):
            self.ops_inside += 1
        elif counts:
            self.ops += 1

    def _site(self, src: str, at: int, macro: str, depth: int) -> None:
        self.levels = max(self.levels, depth + (macro in _BUILDS))
        if depth > self.nesting:
            self.nesting, self.macro = depth, macro
            self.line = src.count("\n", 0, at) + 1
            self.column = at - src.rfind("\n", 0, at)


def _compile(src: str) -> tuple[Any, _Shape]:
    compiled = _programs.get(src)
    if compiled is None:
        try:
            program = _library().compile(prepare(src))
        except ValueError as exc:
            line, column, problem = _syntax_problem(str(exc))
            raise TetherError(
                "invalid_expression",
                f"invalid CEL expression at {line}:{column}: {problem}",
                line=line,
                column=column,
                problem=problem,
                expression=src,
            ) from None
        shape = _Shape(src, program.variables())
        if shape.nesting > MAX_NESTING:
            problem = (
                f"{shape.macro} is nested {shape.nesting} comprehensions deep, more than "
                f"{MAX_NESTING} (its work would grow with a list's length to the power "
                f"{shape.nesting})"
            )
            raise TetherError(
                "invalid_tree",
                f"CEL expression too costly at {shape.line}:{shape.column}: {problem}",
                line=shape.line,
                column=shape.column,
                problem=problem,
                expression=src,
            )
        compiled = _programs[src] = (program, shape)
    return compiled


def _syntax_problem(text: str) -> tuple[int, int, str]:
    """(line, column, problem) from the library's `ERROR: <input>:1:8: ...` text."""
    match = _ERROR.search(text)
    if not match:
        return 1, 1, text
    problem = match.group(3).split(" expecting {")[0]
    reserved = re.fullmatch(r"reserved identifier: (var|const)", problem)
    if reserved:
        word = reserved.group(1)
        problem += f" (write {word.upper()} or ${word.upper()})"
    return int(match.group(1)), int(match.group(2)), problem


def check_expression(src: str) -> None:
    """Raise TetherError("invalid_expression") with `line`/`column` inside the expression if
    `src` does not compile."""
    _compile(src)


def evaluate(
    src: str,
    var: dict[str, Any],
    const: dict[str, Any],
    tools: list[dict[str, Any]] | None = None,
    names: dict[str, Any] | None = None,
) -> Any:
    """The plain Python value of `src` against the scopes, `TOOLS` and `names` (ITEM,
    ITEM_INDEX, ITEMS inside a loop); ExpressionError if evaluation fails."""
    program, shape = _compile(src)
    scopes = {
        **(names or {}),
        "VAR": var,
        "CONST": const,
        "LOCAL": var,
        "GLOBAL": const,
        "TOOLS": tools or [],
    }
    read = {name: value for name, value in scopes.items() if name in shape.reads}
    if shape.levels or shape.ops or shape.ops_inside:
        _bound_work(shape, read)
    try:
        return program.execute(read)
    except KeyError as exc:
        raise ExpressionError(
            f"no such key {exc.args[0]!r}" if exc.args else "no such key"
        ) from None
    except Exception as exc:
        raise ExpressionError(_first_sentence(str(exc)) or type(exc).__name__) from None


def _bound_work(shape: _Shape, scopes: dict[str, Any]) -> None:
    """ExpressionError unless the expression's work is within bounds, `n` being the length of
    the longest list or map in `scopes` or written in the expression and `s` the longest
    string: `n ** levels` within `MAX_WORK`; and what its operations may copy or scan within
    `MAX_COST`: k operations outside a comprehension once, `k**2 * max(n, s)` (each may copy
    what the ones before it built: `s + s + s` copies s, then 2s); k inside one on each of its
    `n ** levels` runs, `k**2 * s` (and `max(n, s)` for `s` at one level: deeper, the levels
    count the lists)."""
    longest, chars, pending = shape.listed, 0, list(scopes.values())
    while pending:
        value = pending.pop()
        if isinstance(value, str | bytes):
            chars = max(chars, len(value))
        if isinstance(value, dict):
            pending += value.keys()
            value = list(value.values())
        if isinstance(value, list):
            longest = max(longest, len(value))
            pending += value
    runs = longest**shape.levels
    if runs > MAX_WORK and shape.levels > 1:
        raise ExpressionError(
            f"too costly: its work grows as n**{shape.levels} and its longest list or map has "
            f"{longest} items ({runs:,} > {MAX_WORK:,}); iterate shorter "
            "lists or nest fewer comprehensions"
        )
    each = chars if shape.levels > 1 else max(chars, longest)
    cost = shape.ops**2 * max(chars, longest) + runs * shape.ops_inside**2 * each
    if cost > MAX_COST:
        raise ExpressionError(
            f"too costly: it may copy or scan {cost:,} characters or items (its longest string "
            f"has {chars:,} characters, its longest list or map {longest:,} items; "
            f"{shape.ops} operations, and {shape.ops_inside} on each of {runs:,} runs of its "
            "comprehensions) "
            f"> {MAX_COST:,}; read shorter strings or lists, or do less inside a comprehension"
        )


def _first_sentence(text: str) -> str:
    return text.split(". ")[0].rstrip(".")


def evaluate_condition(
    src: str,
    var: dict[str, Any],
    const: dict[str, Any],
    tools: list[dict[str, Any]] | None = None,
    names: dict[str, Any] | None = None,
) -> bool:
    """Like `evaluate`, but the result must be a bool."""
    result = evaluate(src, var, const, tools, names)
    if not isinstance(result, bool):
        raise ExpressionError(f"check must produce a bool, got {_describe(result)}")
    return result


def evaluate_list(
    src: str, var: dict[str, Any], const: dict[str, Any], names: dict[str, Any] | None = None
) -> list[Any]:
    """Like `evaluate`, but the result must be a list of JSON values (a `for_each` list: its
    items are kept in the execution's state and carried by requests)."""
    result = evaluate(src, var, const, None, names)
    if not isinstance(result, list):
        raise ExpressionError(f"for_each must produce a list, got {_describe(result)}")
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError):
        raise ExpressionError(
            f"for_each must produce a list of JSON values, got {_describe(result)}"
        ) from None
    return result


def _describe(value: Any) -> str:
    kinds = {int: "int", float: "double", str: "string", list: "list", dict: "map", bytes: "bytes"}
    kind = "null" if value is None else kinds.get(type(value), type(value).__name__)
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(value)
    if len(shown) > _SHOWN_CHARS:
        shown = shown[: _SHOWN_CHARS - 1] + "…"
    return f"{kind} {shown}"
