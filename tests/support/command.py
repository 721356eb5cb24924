"""The real `tether` command in a subprocess, as an agent runs it: for tests that pass raw bytes
on the command line or need a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TETHER = str(Path(sys.executable).parent / "tether")
REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "examples" / "hello-world.yaml"
# One argument of the command line: text, bytes (not always UTF-8) or a path.
Arg = str | bytes | Path


def run(*args: Arg, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """`tether ARGS...`; arguments may be bytes (`os.fsencode`) to pass what is not UTF-8."""
    return subprocess.run(
        [TETHER, *(a if isinstance(a, bytes) else os.fspath(a) for a in args)],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def ok(*args: Arg, stdin: bytes = b"") -> Any:
    """The JSON result of a call that must succeed."""
    done = run(*args, stdin=stdin)
    assert done.returncode == 0, (args, done.stderr.decode(errors="replace"))
    return json.loads(done.stdout)


def refused(exit_code: int, code: str, *args: Arg, stdin: bytes = b"") -> Any:
    """The error of a call that must fail with `exit_code` and error `code`, printing nothing
    on stdout."""
    done = run(*args, stdin=stdin)
    err = done.stderr.decode(errors="replace")
    assert (done.returncode, done.stdout) == (exit_code, b""), (args, done.returncode, err)
    error = json.loads(err)["error"]
    assert error["code"] == code, error
    return error


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder`: a file's bytes, a link's target (never followed). Lock files
    are left out: they hold no data, and taking a lock may create or mark one."""
    out: dict[str, bytes | str] = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(top) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_file() and not name.endswith(".lock"):
                out[rel] = path.read_bytes()
    return dict(sorted(out.items()))
