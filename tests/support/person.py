"""A person at a terminal: `tether approve`/`reject` run in a process whose controlling terminal
is a real pseudo-terminal, with the test typing at it as a person types at theirs.

Owns `at_terminal`: it starts the command in a session of its own with the pty as its terminal,
reads what the command shows there, and types back the one-time code it shows (or what the
test gives), then returns the exit code, the output and the terminal's text.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from support.command import TETHER

_CODE = re.compile(rb"Type ([a-z]+) to ")


class Answered(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    terminal: str


def _own_terminal() -> None:  # in the child, after setsid: the pty on stdin is its terminal
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def at_terminal(
    args: Sequence[str],
    *,
    typed: Callable[[str], str] = lambda code: code,
    env: dict[str, str] | None = None,
    program: Sequence[str] = (TETHER,),
    timeout: float = 30,
) -> Answered:
    """Run `program ARGS` with a terminal of its own; when it shows a code, type
    `typed(code)` and Enter."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [*program, *args],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_own_terminal,
        env=env,
    )
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + timeout
    answered = False
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    shown += os.read(master, 4096)
                except OSError:
                    break
            found = _CODE.search(shown)
            if found and not answered:
                os.write(master, typed(found.group(1).decode()).encode() + b"\n")
                answered = True
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return Answered(proc.returncode, out.decode(), err.decode(), shown.decode("utf-8", "replace"))
