"""Exclusive file locks that work on every platform Tether runs on.

Owns taking and releasing an exclusive lock on an open file: `flock` on POSIX, `msvcrt.locking`
on Windows, chosen once at import by the platform, so that nothing POSIX-only is imported where
it does not exist. On both, the lock keeps out other lockers only, not readers or writers of the
file. `locked(fd)` releases it on exit (closing the file does on POSIX; Windows wants it
released). It does not open or create the files it locks (callers do: the file store's
`run.json.lock`, the guard's session locks and logs).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

if sys.platform == "win32":
    import errno
    import msvcrt

    # msvcrt locks a byte range from the file position, and Windows keeps other processes from
    # reading or writing a locked range: the lock is on one byte far past any data (1 TiB in),
    # so it excludes other lockers only, as flock does.
    _OFFSET = 1 << 40

    def _at_lock_byte(fd: int, mode: int) -> None:
        position = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, _OFFSET, os.SEEK_SET)
        try:
            while True:
                try:
                    msvcrt.locking(fd, mode, 1)
                    return
                except OSError as exc:
                    # LK_LOCK gives up after ten one-second tries: try again, so that a writer
                    # waits for the one before it as long as it takes, as with flock.
                    if mode != msvcrt.LK_LOCK or exc.errno != errno.EDEADLOCK:
                        raise
        finally:
            os.lseek(fd, position, os.SEEK_SET)

    def lock(fd: int) -> None:
        """Block until this process holds the exclusive lock on the open file `fd`."""
        _at_lock_byte(fd, msvcrt.LK_LOCK)

    def unlock(fd: int) -> None:
        """Release the lock `lock(fd)` took."""
        _at_lock_byte(fd, msvcrt.LK_UNLCK)

else:
    import fcntl

    def lock(fd: int) -> None:
        """Block until this process holds the exclusive lock on the open file `fd`."""
        fcntl.flock(fd, fcntl.LOCK_EX)

    def unlock(fd: int) -> None:
        """Release the lock `lock(fd)` took."""
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def locked(fd: int) -> Iterator[None]:
    """Hold the exclusive lock on `fd` for the duration of the block."""
    lock(fd)
    try:
        yield
    finally:
        unlock(fd)
