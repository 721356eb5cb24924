"""A child process that outlives the command which starts it, so that nothing waits on it.

Owns `start`: a fresh Python child in a session of its own (the command's terminal and its
signals do not reach it), holding none of the command's output, handed its work as bytes on
its standard input, which it reads at once; the command goes on without waiting for it. Live
OpenTelemetry hands it the spans left at exit (`tether.otel.send`), notifications their events
(`tether.notify`).

It does not decide what the child does or how long it may take (the code it runs does), and
never raises: a child that cannot be started is returned as the error, for the caller to say.
"""

from __future__ import annotations

import subprocess
import sys


def start(args: list[str], body: bytes) -> Exception | None:
    """Start `python ARGS` detached, write `body` to its stdin and close it; the error when the
    child could not be started or take its input, else None."""
    try:
        child = subprocess.Popen(
            [sys.executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert child.stdin is not None
        with child.stdin as pipe:
            pipe.write(body)  # read by the child at once, before it does anything else
    except Exception as exc:
        return exc
    return None
