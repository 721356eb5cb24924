"""The `tether test FILE... [--json]` command: run tree test files and report, one line a case.

Owns the command's arguments (files; `--json` for a JSON report, `--schema` to print the case
files' JSON Schema), the report (`PASS`/`FAIL` with the file and case, the first difference
under a failed case, a tree's load error under its case, then `N passed, M failed`) and the
exit code: 0 when every case passed, 3 (the class of `verify_failed`) when any failed. Every
file is read and checked before any case runs; a file that cannot be is an error like any
other command's (JSON on stderr, the exit code of its class).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from tether.command.args import Command
from tether.command.output import emit, guarded
from tether.errors import EXIT_OK, TetherError

if TYPE_CHECKING:
    from tether.treetest.run import Result

TEST = Command(
    "test",
    "run recorded walks of trees without an agent (tree tests), one line a case",
    ("FILE",),
    1,
    flags=("--json", "--schema"),
    help="FILE... are tree test files: Tether's format (tree, cases) or abtree's recorded case "
    "(tree, steps, final); see docs/testing.md. --json prints a JSON report instead of lines; "
    "--schema prints the JSON Schema of test files. Exits 3 when a case fails.",
)


def main(argv: list[str]) -> int:
    return guarded(lambda: _main(argv))


def _main(argv: list[str]) -> int:
    files, flags = _split(argv)
    if "--help" in flags:
        sys.stdout.write(TEST.help_text().replace("FILE", "FILE...", 1))
        return EXIT_OK
    if "--schema" in flags:
        from tether.treetest.cases import case_schema

        emit(case_schema())
        return EXIT_OK
    if not files:
        raise TetherError("usage", f"give one or more FILEs; usage: {_usage()}")
    return _run(files, as_json="--json" in flags)


def _usage() -> str:
    return TEST.usage().replace("FILE", "FILE...", 1)


def _split(argv: list[str]) -> tuple[list[str], set[str]]:
    """Files and flags: only the flags this command declares are options (a file may begin
    with `-`), `--` ends them, and `--something` that is neither is a usage error."""
    files: list[str] = []
    flags: set[str] = set()
    options = True
    for token in argv:
        if options and token == "--":
            options = False
        elif options and token in ("-h", "--help"):
            flags.add("--help")
        elif options and token in TEST.flags:
            flags.add(token)
        elif options and token.startswith("--"):
            import difflib

            close = difflib.get_close_matches(token, TEST.flags, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise TetherError("usage", f"unknown option {token!r}{hint}; usage: {_usage()}")
        else:
            files.append(token)
    return files, flags


def _run(files: list[str], *, as_json: bool) -> int:
    from tether.treetest.cases import read_cases
    from tether.treetest.run import CaseClock, run_case
    from tether.verbs import Runtime

    cases = [case for file in files for case in read_cases(file)]
    clock = CaseClock()
    rt = Runtime(clock=clock)
    results = []
    for case in cases:
        result = run_case(rt, case, clock)
        results.append(result)
        if not as_json:
            _print(result)
    failed = sum(1 for r in results if not r.passed)
    passed = len(results) - failed
    if as_json:
        emit({"passed": passed, "failed": failed, "cases": [r.to_dict() for r in results]})
    else:
        sys.stdout.write(f"{passed} passed, {failed} failed\n")
    return TetherError("verify_failed", "").exit_code if failed else EXIT_OK


def _print(result: Result) -> None:
    """A case's line (its file, and its name in Tether's format, where a file holds several),
    then the first difference and the load error, indented."""
    case = result.case
    title = case.file if case.by_path else f"{case.file}: {case.name}"
    lines = [f"{'PASS' if result.passed else 'FAIL'} {title}"]
    if not result.passed:
        lines.append(f"     {result.at}: expected {result.expected}, got {result.got}")
    if result.load_error is not None:
        lines.append(f"     the tree did not load: {result.load_error}")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
