"""Holding a file execution's writer lock from the test process, to make a server's call on that
execution block for as long as a test needs, and seeing (in /proc/locks) that the server is
indeed waiting for it.

Owns `held_lock` and `wait_until_waiting`. It knows one thing of the file store: that
`run.json` is guarded by an exclusive `flock` on `run.json.lock`.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def held_lock(execution: Path) -> Iterator[Path]:
    """Hold the writer lock of the file execution at `execution` until the block ends; yields
    the lock file."""
    lock = Path(f"{execution}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield lock
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def waiting(pid: int, lock: Path) -> bool:
    """Whether process `pid` is blocked waiting for a `flock` on `lock` (a `->` line of
    /proc/locks, which names the waiter's process and the file's inode)."""
    inode = f":{lock.stat().st_ino}"
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and str(pid) in fields and any(f.endswith(inode) for f in fields):
            return True
    return False


def wait_until_waiting(pid: int, lock: Path, limit: float = 30.0) -> None:
    """Return once process `pid` waits for `lock`; fail if it has not within `limit` seconds
    (a bound on a hang, not a measurement)."""
    deadline = time.monotonic() + limit
    while not waiting(pid, lock):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} never waited for {lock}")
        time.sleep(0.02)
