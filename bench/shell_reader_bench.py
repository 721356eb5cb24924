"""The guard's shell reader against the tree-sitter-bash grammar (Codex's reader of shell lines).

Run: `bash scripts/bench` (which installs `tree-sitter` and `tree-sitter-bash` into a folder of
their own, `.cache/bench-site`: they are not Tether's dependencies), or, once they are there,
`PYTHONPATH=.cache/bench-site .venv/bin/python bench/shell_reader_bench.py`. Prints a table.

The spellings are those the guard's tests hold: every evasion `tests/guard/test_shell.py` refuses
and every harmless look-alike it lets pass, and the functions read with their calls' arguments.
Each reader answers `destructive(line)`; a spelling is read right when the verdict is the one the
tests require (a reader refusing every line would refuse every evasion and pass no look-alike,
so the two are printed apart). The grammar reader is a prototype: tree-sitter parses the line, its
`command` nodes (at any depth: substitutions, pipelines, lists, subshells, function bodies) give
each simple command's words with quotes and escapes removed as the grammar sees them, and the
hand reader's own semantic parts do the rest as they do now: wrappers unwrapped (`_unwrap`),
`bash -c`-style strings and `eval` read again, the same judge (`_destructive`). What the grammar
leaves to the shell at run time (brace and parameter expansion, `$'...'`, globbed command names,
a function's body run with its arguments) it does not read.

Measured: spellings read right of all, lines of Tether's own code each needs (the hand reader
is `guard/rules/shell.py` whole; the grammar reader is this prototype's reading part plus the
parts of `shell.py` it reuses), microseconds per line (median over the corpus, 50 rounds), and
the import cost of each in a fresh interpreter (the guard's hook starts a process per call).
"""

from __future__ import annotations

import ast
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tether.guard.rules import shell

ROOT = Path(__file__).resolve().parents[1]
_SHELLS = ("bash", "sh", "zsh", "dash", "ksh")


def _corpus() -> list[tuple[str, bool]]:
    """(line, destructive?) for every spelling the shell tests hold."""
    import importlib.util

    sys.path.insert(0, str(ROOT / "tests"))
    spec = importlib.util.spec_from_file_location("test_shell", ROOT / "tests/guard/test_shell.py")
    assert spec is not None and spec.loader is not None
    tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tests)
    tree = ast.parse((ROOT / "tests" / "guard" / "test_shell.py").read_text())
    functions = [
        ast.literal_eval(e)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize"
        for arg in node.args[1:2]
        if isinstance(arg, ast.List)
        for e in arg.elts
    ]
    return (
        [(line, True) for line in tests.EVASIONS + functions]
        + [(line, False) for line in tests.HARMLESS]
        + [('f(){ rm "$@"; }; f stale.lock', False)]
    )


class _Grammar:
    """destructive(line) read through tree-sitter-bash (see the module's docstring)."""

    def __init__(self) -> None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        self.parser = Parser(Language(tree_sitter_bash.language()))

    def destructive(self, line: str) -> str | None:
        """The grammar's reading of the commands, then the hand reader's look for SQL."""
        found = self._commands(line, 0)
        if found is None and ("drop" in line.lower() or "truncate" in line.lower()):
            sql = shell._SQL.search(
                shell._SQL_COMMENT.sub(" ", line.translate(shell._STRIP_QUOTES))
            )
            found = None if sql is None else sql.group(1)
        return found

    def _commands(self, line: str, depth: int) -> str | None:
        if depth > shell.MAX_DEPTH:
            return "nested too deep"
        root = self.parser.parse(line.encode()).root_node
        stack = [root]
        while stack:
            node = stack.pop()
            stack.extend(reversed(node.children))
            if node.type != "command":
                continue
            words = [_word(c) for c in node.children if c.type not in ("file_redirect",)]
            words = shell._unwrap([w for w in words if w is not None])
            if not words:
                continue
            name, args = shell._name(words[0]).lower(), words[1:]
            if name in _SHELLS and "-c" in args and args.index("-c") + 1 < len(args):
                found = self._commands(args[args.index("-c") + 1], depth + 1)
            elif name == "eval":
                found = self._commands(" ".join(args), depth + 1)
            else:
                found = shell._destructive(name, args)
            if found:
                return found
        return None


def _word(node: Any) -> str | None:
    """A word as the grammar gives it, its quotes and escapes removed (None: not a word)."""
    text = node.text.decode()
    if node.type == "raw_string":
        return text[1:-1]
    if node.type == "string":
        return "".join(_word(c) or "" for c in node.children if c.type != '"')
    if node.type == "string_content":
        return text
    if node.type == "concatenation":
        return "".join(_word(c) or "" for c in node.children)
    if node.type in ("command_name", "word", "number"):
        inner = [_word(c) for c in node.children]
        return "".join(w or "" for w in inner) if node.children else text.replace("\\", "")
    if node.type in ("command_substitution", "expansion", "simple_expansion"):
        return ""
    return None


def _lines_of(path: Path, start: str | None = None, end: str | None = None) -> int:
    text = path.read_text()
    if start is not None:
        text = text[text.index(start) : text.index(end) if end else None]
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def _import_ms(code: str) -> float:
    runs = []
    for _ in range(5):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        runs.append((time.perf_counter() - began) * 1000)
    return statistics.median(runs)


def main() -> None:
    corpus = _corpus()
    grammar = _Grammar()
    readers = {"hand reader (shell.py)": shell.destructive, "tree-sitter-bash": grammar.destructive}
    own = {
        "hand reader (shell.py)": _lines_of(
            ROOT / "src" / "tether" / "guard" / "rules" / "shell.py"
        ),
        "tree-sitter-bash": _lines_of(Path(__file__), "class _Grammar", "def _lines_of")
        + _lines_of(
            ROOT / "src" / "tether" / "guard" / "rules" / "shell.py", "def _unwrap", "def _long"
        )
        + _lines_of(
            ROOT / "src" / "tether" / "guard" / "rules" / "shell.py", "def _rm", "def _shell_string"
        ),
    }
    imports = {
        "hand reader (shell.py)": _import_ms("import tether.guard.rules.shell"),
        "tree-sitter-bash": _import_ms(
            "import tree_sitter, tree_sitter_bash, tether.guard.rules.shell"
        ),
    }
    print(f"{len(corpus)} spellings from the guard's shell tests\n")
    columns = ("reader", "read right", "evasions refused", "look-alikes passed", "own lines")
    print("| " + " | ".join((*columns, "µs per line (median)", "import ms")) + " |")
    print("|---|---|---|---|---|---|---|")
    misses: dict[str, list[str]] = {}
    for name, read in readers.items():
        right = [line for line, want in corpus if bool(read(line)) == want]
        refused = sum(1 for line, want in corpus if want and line in right)
        passed = sum(1 for line, want in corpus if not want and line in right)
        evasions = sum(1 for _, want in corpus if want)
        misses[name] = [line for line, _ in corpus if line not in right]
        took = []
        for line, _ in corpus:
            began = time.perf_counter()
            for _ in range(50):
                read(line)
            took.append((time.perf_counter() - began) / 50 * 1e6)
        print(
            f"| {name} | {len(right)} of {len(corpus)} | {refused} of {evasions} | "
            f"{passed} of {len(corpus) - evasions} | {own[name]} | "
            f"{statistics.median(took):.1f} | {imports[name]:.0f} |"
        )
    for name, missed in misses.items():
        print(f"\n{name} reads wrong ({len(missed)}):")
        for line in missed:
            shown = repr(line)
            print(f"  {shown if len(shown) <= 80 else shown[:60] + f'... ({len(line)} chars)'}")


if __name__ == "__main__":
    main()
