"""Tether imports and locks without POSIX-only modules (Windows has no `fcntl`).

No Windows machine runs these tests, so they attack the two ways a POSIX-only import would
break there: a module that imports one at its top level (found by reading every module's
syntax tree), and the file store or the guard's session store reaching for `fcntl` while they
work (a process in which importing `fcntl` fails walks an execution and records guard events,
locking through the Windows branch of `tether.locking` against a stand-in `msvcrt`, with
`os.pread` and `os.pwrite` gone, as they are on Windows).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml"
POSIX_ONLY = {"fcntl", "termios", "tty", "pty", "pwd", "grp", "resource", "posix", "syslog"}


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.AST]:
    out = []
    while node in parents:
        node = parents[node]
        out.append(node)
    return out


def _runs_at_import(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether `node` runs whenever its module is imported: not inside a function, and not
    under an `if sys.platform ...` / `if os.name ...` branch."""
    for above in _ancestors(node, parents):
        if isinstance(above, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        if isinstance(above, ast.If) and any(
            isinstance(n, ast.Attribute) and n.attr in ("platform", "name")
            for n in ast.walk(above.test)
        ):
            return False
    return True


def test_no_module_imports_a_posix_only_module_at_its_top_level() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {
            child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module.split(".")[0]}
            else:
                continue
            if names & POSIX_ONLY and _runs_at_import(node, parents):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


_WINDOWS_PROBE = """
import json, sys, types
sys.modules["fcntl"] = None  # importing fcntl now raises ImportError, as on Windows
import os
del os.pread, os.pwrite  # and os has no pread or pwrite there
calls = []
msvcrt = types.ModuleType("msvcrt")
msvcrt.LK_UNLCK, msvcrt.LK_LOCK = 0, 1
msvcrt.locking = lambda fd, mode, nbytes: calls.append((mode, nbytes, os.lseek(fd, 0, 1)))
sys.modules["msvcrt"] = msvcrt
real, sys.platform = sys.platform, "win32"
import tether.locking
sys.platform = real

from tether.verbs import Runtime
from tether.guard.rules.ruleset import Guard
from tether.guard.harness.session_store import SessionStore

run, state, example = sys.argv[1:4]
rt = Runtime()
rt.start(example, run)
rt.submit(run, "success")
rt.var_write(run, "time_of_day", "morning")
rt.submit(run, "success")
store_calls = list(calls)
guard = Guard.from_config({"security": {"behavior": {"profile": "dev"}}})
with SessionStore(state).session(guard, "s1", cwd=state) as session:
    session.pre_tool("Bash", {"command": "ls"})
print(json.dumps({
    "store": store_calls,
    "all": calls,
    "fcntl_loaded": sys.modules.get("fcntl") is not None,
    "next": rt.next(run)["name"],
}))
"""


def test_the_stores_lock_through_msvcrt_where_fcntl_cannot_be_imported(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _WINDOWS_PROBE,
            str(tmp_path / "run.json"),
            str(tmp_path / "guard"),
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["fcntl_loaded"] is False
    assert out["next"] == "Morning_Greeting"
    # Every write (start, two submits, a var write) took the lock and gave it back; the guard's
    # session took its lock, and inside it the log's, and gave both back.
    # Each lock is one byte 1 TiB in, past any data, so readers are never kept out.
    take, give = [1, 1, 1 << 40], [0, 1, 1 << 40]
    assert out["store"] == [take, give] * 4
    assert out["all"][len(out["store"]) :] == [take, take, give, give]
